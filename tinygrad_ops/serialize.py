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

import contextlib
import json
import os
import re
import secrets
import socket
import stat
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

    Like `open(path, "wb")`, it writes through a symbolic link, refuses a write-protected
    file (one with no write permission bit: refused even for root, whom `open` would let
    through, since a checkpoint protected on purpose must not be replaced by a rename), and
    keeps the mode of a file it overwrites.

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
    target = os.path.realpath(path)
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot save to {path}: the folder {folder} does not exist")
    mode = _mode_to_keep(target, path)
    remove_stale_temporaries(target)
    descriptor, temporary = _create_temporary(target)
    try:
        if mode is not None:
            os.chmod(temporary, mode)
        with os.fdopen(descriptor, "wb") as file:
            np.savez(file, **arrays)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        # Whatever went wrong, the previous file at `path` is untouched; drop the partial one.
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
    _fsync_folder(folder)


def _mode_to_keep(target, path):
    """The permission bits of the file `save` replaces (None for a new file: the new one
    gets what open() would give it); a write-protected file is a PermissionError."""
    try:
        status = os.stat(target)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(status.st_mode):
        raise IsADirectoryError(f"cannot save to {path}: it is a folder")
    mode = stat.S_IMODE(status.st_mode)
    if not os.access(target, os.W_OK) or mode & 0o222 == 0:
        raise PermissionError(
            f"cannot save to {path}: the file is write-protected (mode {mode:o}); make it "
            "writable (chmod u+w) or save under another name"
        )
    return mode


# -- temporary files: named so that the ones a killed save left can be found again -------------
#
# A save writes `.<name>.<host>.<pid>.<random>.tmp` beside the target. A save or load of the
# same path removes those whose writer is gone: same host, and no process with that id any more.
# A live writer's file (another process saving the same path right now) is never touched; nor
# is a file from another host (a shared folder), whose processes this one cannot see.

_HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:40] or "host"


def _create_temporary(target):
    folder, name = os.path.split(target)
    while True:
        temporary = os.path.join(
            folder, f".{name}.{_HOST}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        )
        try:
            # 0o666 masked by the umask, as open() gives a new file.
            return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), temporary
        except FileExistsError:
            continue  # a clash of the random part: draw again


def remove_stale_temporaries(target):
    """Remove the temporary files that saves of `target` killed midway left behind.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> stale = os.path.join(folder, f".c.npz.{_HOST}.999999999.0123abcd.tmp")
    >>> open(stale, "wb").close()
    >>> remove_stale_temporaries(os.path.join(folder, "c.npz"))
    >>> os.listdir(folder)
    []
    """
    folder, name = os.path.split(os.fspath(target))
    pattern = re.compile(rf"\.{re.escape(name)}\.{re.escape(_HOST)}\.(\d+)\.[0-9a-f]{{8}}\.tmp")
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return  # an unreadable folder: nothing we could clean
    for entry in names:
        match = pattern.fullmatch(entry)
        if match is None or _process_is_alive(int(match.group(1))):
            continue
        # Removed by another process meanwhile, or a folder we may only read: nothing to do.
        with contextlib.suppress(FileNotFoundError, PermissionError):
            os.remove(os.path.join(folder, entry))


def _process_is_alive(pid):
    if pid == os.getpid():
        return True  # another thread of this process may be saving the same path
    if os.name != "posix":
        return True  # no harmless liveness probe (os.kill terminates on Windows): keep it
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, and belongs to another user
    return True


# -- load --------------------------------------------------------------------------------------

# What numpy's and zipfile's readers raise for a damaged archive: a bad or truncated zip,
# a failed CRC, an unsupported compression method or zip version (NotImplementedError),
# an encrypted member (RuntimeError), a bad .npy header (ValueError), short reads (EOFError).
_DAMAGED_ARCHIVE = (
    zipfile.BadZipFile,
    OSError,
    ValueError,
    EOFError,
    KeyError,
    NotImplementedError,
    RuntimeError,
)


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
    remove_stale_temporaries(os.path.realpath(path))
    if not zipfile.is_zipfile(path):
        size = os.path.getsize(path)
        raise CheckpointError(
            f"cannot load {path}: not an .npz archive ({size} bytes; the file is truncated, "
            "corrupt, or was not written by tg.save)"
        )
    header, arrays = _read_archive(path)
    try:
        return _decode(header["object"], arrays, path)
    except RecursionError:
        raise CheckpointError(f"cannot load {path}: its structure is nested too deeply") from None


def _read_archive(path):
    """The checked header and every array of the archive at `path`."""
    try:
        # Our own handle: closed even when numpy fails before its archive object exists.
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as archive:
            names = set(archive.files)
            if HEADER not in names:
                raise CheckpointError(
                    f"cannot load {path}: it is an .npz file but not a tinygrad_ops checkpoint "
                    f"(no '{HEADER}' entry; it has {sorted(names)[:5]}...); read it with np.load"
                )
            header = _read_header(archive[HEADER], path)
            # Read every array now, inside the try: a damaged entry fails here, clearly.
            arrays = {name: archive[name] for name in names if name != HEADER}
    except CheckpointError:
        raise
    except _DAMAGED_ARCHIVE as error:
        raise CheckpointError(
            f"cannot load {path}: the file is truncated or corrupt ({type(error).__name__}: "
            f"{error})"
        ) from None
    return header, arrays


def _read_header(entry, path):
    try:
        header = json.loads(str(entry))
    except (ValueError, RecursionError) as error:
        raise CheckpointError(
            f"cannot load {path}: its '{HEADER}' entry is not readable JSON "
            f"({type(error).__name__})"
        ) from None
    if not isinstance(header, dict) or "object" not in header:
        raise CheckpointError(f"cannot load {path}: its '{HEADER}' entry is not a header")
    if header.get("format") != FORMAT or header.get("version") != VERSION:
        raise CheckpointError(
            f"cannot load {path}: unknown checkpoint format {header.get('format')!r} "
            f"version {header.get('version')!r} (this is version {VERSION})"
        )
    return header


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
    """The object a structure entry describes; anything but what `_encode` writes is a
    CheckpointError (the file is damaged, or was not written by `save`)."""
    if isinstance(node, dict) and len(node) == 1:
        ((kind, payload),) = node.items()
        if kind in ("tensor", "array"):
            return _decode_array(kind, payload, arrays, path)
        if kind == "value" and (payload is None or isinstance(payload, (bool, int, str))):
            return payload
        if kind == "float" and isinstance(payload, str):
            try:
                return float(payload)
            except ValueError:
                pass
        if kind == "dict" and isinstance(payload, list) and all(map(_is_dict_item, payload)):
            return {key: _decode(item, arrays, path) for key, item in payload}
        if kind in ("list", "tuple") and isinstance(payload, list):
            items = [_decode(item, arrays, path) for item in payload]
            return items if kind == "list" else tuple(items)
    text = repr(node)
    text = text if len(text) <= 80 else text[:77] + "..."
    raise CheckpointError(f"cannot load {path}: unreadable structure entry {text}")


def _is_dict_item(item):
    return (
        isinstance(item, list)
        and len(item) == 2
        and isinstance(item[0], (str, int))
        and not isinstance(item[0], bool)
    )


def _decode_array(kind, name, arrays, path):
    if not isinstance(name, str) or name not in arrays:
        raise CheckpointError(f"cannot load {path}: the entry {name!r} is missing")
    array = arrays[name]
    numeric = "biuf" if kind == "tensor" else "biufc"  # a Tensor is never complex
    if array.dtype.kind not in numeric:
        raise CheckpointError(
            f"cannot load {path}: the entry {name!r} holds {array.dtype} data, not numbers"
        )
    return Tensor(array) if kind == "tensor" else array
