"""`save` and `load`: state dicts and checkpoints as .npz files, written atomically.

What is inside
    A plain numpy .npz (a zip of .npy arrays, readable with `np.load`): one entry per array,
    plus one entry `__tinygrad_ops__` holding, as JSON, the structure of the saved object
    (nested dicts, lists, numbers, strings) with each array replaced by its entry name.
    Nothing is pickled, so loading a file cannot run code.

Why atomically
    A crash in the middle of writing must not destroy the previous checkpoint. The file is
    written under a temporary name in the same folder, flushed to disk (fsync), and only
    then renamed over the old one with `os.replace`, which is atomic: a reader sees the old
    file or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile

import numpy as np

from .tensor import Tensor

HEADER = "__tinygrad_ops__"
FORMAT = "tinygrad_ops-checkpoint"
VERSION = 1


class CheckpointError(ValueError):
    """A file that `tg.load` cannot read: truncated, corrupt, or not written by `tg.save`."""


def save(obj, path):
    """Write `obj` (a state dict, or nested dicts/lists of Tensors, arrays, numbers,
    strings and None) to `path` as an .npz file, atomically.

    >>> import os, tempfile
    >>> import tinygrad_ops as tg
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> tg.save({"weight": tg.ones(2), "epoch": 3}, path)
    >>> tg.load(path)["epoch"]
    3
    """
    path = os.fspath(path)
    arrays = {}
    structure = _encode(obj, arrays, "obj")
    header = json.dumps({"format": FORMAT, "version": VERSION, "object": structure})
    arrays[HEADER] = np.array(header)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot save to {path}: the folder {folder} does not exist")
    descriptor, temporary = tempfile.mkstemp(
        dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp"
    )
    try:
        # mkstemp makes the file private (0600); give it the mode a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        with os.fdopen(descriptor, "wb") as file:
            np.savez(file, **arrays)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        # Whatever went wrong, the previous file at `path` is untouched; drop the partial one.
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
    _fsync_folder(folder)


def load(path):
    """Read an object written by `save`. Tensors come back as Tensors, numpy arrays as
    arrays. A missing file is a FileNotFoundError; a truncated, corrupt or foreign file
    is a `CheckpointError` that names the file and the problem.

    >>> import os, tempfile
    >>> import tinygrad_ops as tg
    >>> path = os.path.join(tempfile.mkdtemp(), "state.npz")
    >>> tg.save({"w": tg.Tensor([1.0, 2.0])}, path)
    >>> tg.load(path)["w"].numpy()
    array([1., 2.], dtype=float32)
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no checkpoint at {path}: the file does not exist")
    if os.path.isdir(path):
        raise CheckpointError(f"cannot load {path}: it is a folder, not a checkpoint file")
    if not zipfile.is_zipfile(path):
        size = os.path.getsize(path)
        raise CheckpointError(
            f"cannot load {path}: not an .npz archive ({size} bytes; the file is truncated, "
            "corrupt, or was not written by tg.save)"
        )
    try:
        with np.load(path, allow_pickle=False) as archive:
            names = set(archive.files)
            if HEADER not in names:
                raise CheckpointError(
                    f"cannot load {path}: it is an .npz file but not a tinygrad_ops checkpoint "
                    f"(no '{HEADER}' entry; it has {sorted(names)[:5]}...); read it with np.load"
                )
            header = json.loads(str(archive[HEADER]))
            if header.get("format") != FORMAT or header.get("version") != VERSION:
                raise CheckpointError(
                    f"cannot load {path}: unknown checkpoint format {header.get('format')!r} "
                    f"version {header.get('version')!r} (this is version {VERSION})"
                )
            # Read every array now, inside the try: a damaged entry fails here, clearly.
            arrays = {name: archive[name] for name in names if name != HEADER}
    except CheckpointError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError) as error:
        raise CheckpointError(
            f"cannot load {path}: the file is truncated or corrupt ({type(error).__name__}: "
            f"{error})"
        ) from None
    return _decode(header["object"], arrays, path)


def _fsync_folder(folder):
    """Make the rename itself durable (POSIX; a no-op where folders cannot be opened)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


# -- the structure: JSON with arrays referred to by entry name ---------------------------------


def _encode(value, arrays, where):
    if isinstance(value, Tensor):
        name = f"array{len(arrays)}"
        arrays[name] = value.data
        return {"tensor": name}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            raise TypeError(f"save: {where} is an array of dtype {value.dtype}, not numeric")
        name = f"array{len(arrays)}"
        arrays[name] = value
        return {"array": name}
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return {"value": value}
    if isinstance(value, float):
        # JSON has no inf/nan; repr round-trips every float exactly.
        return {"float": repr(value)}
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            if isinstance(key, np.integer):
                key = int(key)
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise TypeError(f"save: {where} has a key {key!r}; keys must be str or int")
            items.append([key, _encode(item, arrays, f"{where}[{key!r}]")])
        return {"dict": items}
    if isinstance(value, (list, tuple)):
        kind = "list" if isinstance(value, list) else "tuple"
        return {kind: [_encode(item, arrays, f"{where}[{i}]") for i, item in enumerate(value)]}
    raise TypeError(
        f"save: {where} is a {type(value).__name__}; save takes Tensors, numpy arrays, "
        "numbers, strings, None, and dicts/lists/tuples of them"
    )


def _decode(node, arrays, path):
    try:
        if "tensor" in node:
            return Tensor(arrays[node["tensor"]])
        if "array" in node:
            return arrays[node["array"]]
        if "value" in node:
            return node["value"]
        if "float" in node:
            return float(node["float"])
        if "dict" in node:
            return {key: _decode(item, arrays, path) for key, item in node["dict"]}
        if "list" in node:
            return [_decode(item, arrays, path) for item in node["list"]]
        if "tuple" in node:
            return tuple(_decode(item, arrays, path) for item in node["tuple"])
    except KeyError as error:
        raise CheckpointError(f"cannot load {path}: the entry {error} is missing") from None
    raise CheckpointError(f"cannot load {path}: unreadable structure entry {node!r}")
