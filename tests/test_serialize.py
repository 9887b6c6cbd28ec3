"""tg.save / tg.load: round trips, atomic writes, and clear errors for bad files."""

import os
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
