"""tg.save / tg.load: round trips, atomic writes, and clear errors for bad files."""

import contextlib
import json
import os
import re
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import tinygrad_ops as tg
from tinygrad_ops import serialize


def test_round_trip_keeps_structure_types_and_dtypes(tmp_path):
    path = tmp_path / "everything.npz"
    obj = {
        "weights": {"0.weight": tg.Tensor(np.arange(6, dtype=np.float64).reshape(2, 3))},
        "half": tg.Tensor(np.ones(2, dtype=np.float16)),
        "counts": np.array([1, 2, 3], dtype=np.int64),
        "scalar": np.array(2.5),
        "state": {0: {"step": 3, "lr": 0.1}, 7: {"step": None}},
        "betas": (0.9, 0.999),
        "history": [0.5, float("inf"), 1e-300],
        "name": "run",
        "flag": True,
    }
    tg.save(obj, path)
    loaded = tg.load(path)
    assert set(loaded) == set(obj)
    assert isinstance(loaded["weights"]["0.weight"], tg.Tensor)
    assert loaded["weights"]["0.weight"].dtype == np.float64
    np.testing.assert_array_equal(loaded["weights"]["0.weight"].numpy(), np.arange(6).reshape(2, 3))
    assert loaded["half"].dtype == np.float16
    assert isinstance(loaded["counts"], np.ndarray)
    assert loaded["counts"].dtype == np.int64
    assert loaded["scalar"].shape == ()
    assert loaded["state"] == {0: {"step": 3, "lr": 0.1}, 7: {"step": None}}
    assert loaded["betas"] == (0.9, 0.999)
    assert loaded["history"] == [0.5, float("inf"), 1e-300]
    assert loaded["name"] == "run"
    assert loaded["flag"] is True


def test_the_file_is_a_plain_npz(tmp_path):
    tg.save({"w": tg.ones(3)}, tmp_path / "plain.npz")
    with np.load(tmp_path / "plain.npz", allow_pickle=False) as archive:
        assert serialize.HEADER in archive.files
        assert len(archive.files) == 2


def test_a_crash_between_write_and_rename_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "checkpoint.npz"
    tg.save({"epoch": 1, "w": tg.ones(4)}, path)

    def crash(source, destination):
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(serialize.os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        tg.save({"epoch": 2, "w": tg.zeros(4)}, path)
    monkeypatch.undo()
    loaded = tg.load(path)
    assert loaded["epoch"] == 1
    np.testing.assert_array_equal(loaded["w"].numpy(), np.ones(4))
    assert os.listdir(tmp_path) == ["checkpoint.npz"]  # no temporary file left behind


def test_a_crash_while_writing_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "checkpoint.npz"
    tg.save({"epoch": 1}, path)

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(serialize.np, "savez", crash)
    with pytest.raises(KeyboardInterrupt):
        tg.save({"epoch": 2}, path)
    monkeypatch.undo()
    assert tg.load(path)["epoch"] == 1
    assert os.listdir(tmp_path) == ["checkpoint.npz"]


def test_saved_files_get_ordinary_permissions(tmp_path):
    tg.save({"epoch": 1}, tmp_path / "c.npz")
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "c.npz").stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.parametrize("keep", [0.5, 0.9, 0.999])
def test_a_truncated_file_is_a_clear_error(tmp_path, keep):
    path = tmp_path / "checkpoint.npz"
    generator = np.random.default_rng(0)
    tg.save({"a": tg.Tensor(generator.random(2000)), "b": tg.Tensor(generator.random(10))}, path)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(tg.CheckpointError) as error:
        tg.load(path)
    message = str(error.value)
    assert str(path) in message
    assert "truncated" in message


def test_a_corrupted_entry_is_a_clear_error(tmp_path):
    path = tmp_path / "checkpoint.npz"
    tg.save({"a": tg.Tensor(np.zeros(5000))}, path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # flip bits inside the array's bytes: the CRC check fails
    path.write_bytes(bytes(data))
    with pytest.raises(tg.CheckpointError, match="truncated or corrupt"):
        tg.load(path)


def test_a_missing_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nowhere\.npz"):
        tg.load(tmp_path / "nowhere.npz")


def test_a_foreign_file_is_a_clear_error(tmp_path):
    text = tmp_path / "notes.npz"
    text.write_text("these are not arrays")
    with pytest.raises(tg.CheckpointError, match=r"not an \.npz archive"):
        tg.load(text)
    other = tmp_path / "other.npz"
    np.savez(other, weights=np.zeros(3))
    with pytest.raises(tg.CheckpointError, match="not a tinygrad_ops checkpoint"):
        tg.load(other)
    archive = tmp_path / "archive.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("readme.txt", "hello")
    with pytest.raises(tg.CheckpointError, match="not a tinygrad_ops checkpoint"):
        tg.load(archive)


def test_unsupported_values_are_refused_before_writing(tmp_path):
    with pytest.raises(TypeError, match=r"obj\['model'\] is a set"):
        tg.save({"model": {1, 2}}, tmp_path / "bad.npz")
    with pytest.raises(TypeError, match="not numeric"):
        tg.save({"names": np.array(["a"], dtype=object)}, tmp_path / "bad.npz")
    assert not (tmp_path / "bad.npz").exists()


def test_saving_into_a_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        tg.save({"a": 1}, tmp_path / "no" / "such" / "c.npz")


# -- item 11: write-protected targets and the mode of an overwritten file ----------------------


def test_a_write_protected_checkpoint_is_not_replaced(tmp_path):
    path = tmp_path / "final.npz"
    tg.save({"epoch": 1}, path)
    path.chmod(0o444)
    with pytest.raises(PermissionError, match=r"final\.npz.*write-protected"):
        tg.save({"epoch": 2}, path)
    assert tg.load(path)["epoch"] == 1
    assert path.stat().st_mode & 0o777 == 0o444
    assert sorted(os.listdir(tmp_path)) == ["final.npz"]


def test_overwriting_keeps_the_mode_of_the_file(tmp_path):
    path = tmp_path / "shared.npz"
    tg.save({"epoch": 1}, path)
    path.chmod(0o640)
    tg.save({"epoch": 2}, path)
    assert tg.load(path)["epoch"] == 2
    assert path.stat().st_mode & 0o777 == 0o640


def test_saving_through_a_symbolic_link_writes_the_file_it_points_to(tmp_path):
    target = tmp_path / "runs" / "checkpoint.npz"
    target.parent.mkdir()
    tg.save({"epoch": 1}, target)
    link = tmp_path / "latest.npz"
    link.symlink_to(target)
    tg.save({"epoch": 2}, link)
    assert link.is_symlink()
    assert tg.load(target)["epoch"] == 2


# -- item 12: temporary files left by a killed save --------------------------------------------

# A child process that starts saving `path` and stops halfway through writing the file (it
# then sleeps until it is killed): what a SIGKILL during a long save leaves behind.
_STALLED_SAVE = """
import sys, time
import numpy as np
import tinygrad_ops as tg
from tinygrad_ops import serialize

def stall(file, **arrays):
    file.write(b"PK" + bytes(4096))
    file.flush()
    print("writing", flush=True)
    time.sleep(60)

serialize.np.savez = stall
tg.save({"w": tg.ones(3)}, sys.argv[1])
"""


@contextlib.contextmanager
def _a_stalled_save(path):
    """A save of `path` in a child process, stalled halfway; killed on leaving."""
    with subprocess.Popen(
        [sys.executable, "-c", _STALLED_SAVE, str(path)], stdout=subprocess.PIPE, text=True
    ) as child:
        try:
            assert child.stdout.readline() == "writing\n"
            yield child
        finally:
            child.kill()


def _temporaries(folder):
    return sorted(name for name in os.listdir(folder) if name.endswith(".tmp"))


@pytest.mark.parametrize("later", ["save", "load"])
def test_a_later_save_or_load_removes_what_a_killed_save_left(tmp_path, later):
    path = tmp_path / "checkpoint.npz"
    tg.save({"epoch": 1}, path)
    with _a_stalled_save(path):
        pass  # killed midway
    assert len(_temporaries(tmp_path)) == 1  # the killed save's partial file
    if later == "save":
        tg.save({"epoch": 2}, path)
    else:
        assert tg.load(path)["epoch"] == 1
    assert _temporaries(tmp_path) == []


def test_a_live_save_of_another_process_is_left_alone(tmp_path):
    path = tmp_path / "checkpoint.npz"
    with _a_stalled_save(path):
        partial = _temporaries(tmp_path)
        assert len(partial) == 1
        tg.save({"epoch": 2}, path)
        assert tg.load(path)["epoch"] == 2
        assert _temporaries(tmp_path) == partial


def test_temporaries_of_other_files_are_left_alone(tmp_path):
    other = tmp_path / ".other.npz.1.0123abcd.tmp"
    other.write_bytes(b"not ours")
    tg.save({"epoch": 1}, tmp_path / "checkpoint.npz")
    assert other.exists()


# -- item 14: every damaged or foreign file is a CheckpointError naming it ---------------------


def _npz_with_header(path, header, **arrays):
    if not isinstance(header, str):
        header = json.dumps(header)
    np.savez(path, **{serialize.HEADER: np.array(header)}, **arrays)


def _checkpoint_header(obj):
    return {"format": serialize.FORMAT, "version": serialize.VERSION, "object": obj}


@pytest.mark.parametrize(
    ("header", "arrays"),
    [
        pytest.param({"format": serialize.FORMAT, "version": 1}, {}, id="no-object"),
        pytest.param([1, 2], {}, id="header-a-list"),
        pytest.param("5", {}, id="header-a-number"),
        pytest.param("{not json", {}, id="header-not-json"),
        pytest.param(_checkpoint_header([1]), {}, id="entry-a-list"),
        pytest.param(_checkpoint_header({"dict": [[1]]}), {}, id="dict-item-not-a-pair"),
        pytest.param(_checkpoint_header({"dict": 5}), {}, id="dict-not-a-list"),
        pytest.param(_checkpoint_header({"dict": [[[1], {"value": 1}]]}), {}, id="list-key"),
        pytest.param(_checkpoint_header({"float": "abc"}), {}, id="float-not-a-number"),
        pytest.param(_checkpoint_header({"float": [1]}), {}, id="float-a-list"),
        pytest.param(_checkpoint_header({"list": 5}), {}, id="list-not-a-list"),
        pytest.param(_checkpoint_header({"value": {"a": 1}}), {}, id="value-a-dict"),
        pytest.param(_checkpoint_header({"tensor": ["a"]}), {}, id="tensor-name-a-list"),
        pytest.param(_checkpoint_header({"tensor": "gone"}), {}, id="tensor-missing"),
        pytest.param(
            _checkpoint_header({"tensor": "a"}), {"a": np.array(["text"])}, id="tensor-of-text"
        ),
        pytest.param(
            f'{{"format": "{serialize.FORMAT}", "version": 1, "object": '
            + '{"list": [' * 5000
            + "]}" * 5000
            + "}",
            {},
            id="nested-too-deep",
        ),
    ],
)
def test_a_damaged_structure_is_a_checkpoint_error(tmp_path, header, arrays):
    path = tmp_path / "damaged.npz"
    _npz_with_header(path, header, **arrays)
    with pytest.raises(tg.CheckpointError, match=re.escape(str(path))):
        tg.load(path)


def test_an_unsupported_compression_method_is_a_checkpoint_error(tmp_path):
    path = tmp_path / "checkpoint.npz"
    tg.save({"w": tg.ones(3)}, path)
    data = bytearray(path.read_bytes())
    local, central = data.find(b"PK\x03\x04"), data.find(b"PK\x01\x02")
    data[local + 8] = data[central + 10] = 99  # the compression method of the first entry
    path.write_bytes(bytes(data))
    with pytest.raises(tg.CheckpointError, match=re.escape(str(path))):
        tg.load(path)


def test_random_damage_is_always_a_checkpoint_error(tmp_path):
    path = tmp_path / "checkpoint.npz"
    tg.save({"model": {"w": tg.ones(3)}, "epoch": 2, "history": [1.5, (2, 3)]}, path)
    original = path.read_bytes()
    generator = np.random.default_rng(0)
    unclear = []
    for _ in range(300):
        data = bytearray(original)
        for position in generator.integers(0, len(data), size=generator.integers(1, 8)):
            data[position] = generator.integers(0, 256)
        path.write_bytes(bytes(data))
        try:
            tg.load(path)  # damage in padding or an unused field can leave it readable
        except tg.CheckpointError as error:
            if str(path) not in str(error):
                unclear.append(str(error))
        except Exception as error:  # what the test is for: nothing else escapes
            unclear.append(f"{type(error).__name__}: {error}")
    assert unclear == []
