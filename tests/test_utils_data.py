"""tg.utils.data (Dataset, TensorDataset, DataLoader, default_collate) against
torch.utils.data: the same batches, in the same layout and dtypes."""

import numpy as np
import pytest
import torch
import torch.utils.data as torch_data

import tinygrad_ops as tg
from tinygrad_ops.utils import data


def as_lists(batch):
    if isinstance(batch, dict):
        return {key: as_lists(value) for key, value in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [as_lists(value) for value in batch]
    return batch.tolist() if hasattr(batch, "tolist") else batch


class Samples:
    """A map-style dataset whose samples are a dict of a number, an int, a list and an array."""

    def __init__(self, module):
        self.module = module

    def __len__(self):
        return 5

    def __getitem__(self, index):
        array = np.full(2, index, dtype=np.float32)
        return {"x": float(index) / 2, "y": (index, [index * 2.0]), "z": array, "name": f"s{index}"}


class OurSamples(Samples, data.Dataset):
    pass


class TheirSamples(Samples, torch_data.Dataset):
    pass


@pytest.mark.parametrize("options", [{}, {"batch_size": 2}, {"batch_size": 2, "drop_last": True}])
def test_tensor_dataset_batches_as_torch(options):
    features, labels = np.arange(10.0).reshape(5, 2), np.arange(5)
    ours = data.DataLoader(data.TensorDataset(tg.Tensor(features), tg.tensor(labels)), **options)
    theirs = torch_data.DataLoader(
        torch_data.TensorDataset(torch.tensor(features), torch.tensor(labels)), **options
    )
    assert len(ours) == len(theirs)
    assert [as_lists(batch) for batch in ours] == [as_lists(batch) for batch in theirs]
    assert [b[1].dtype for b in ours] == [np.int64] * len(ours)


def test_default_collate_of_a_dataset_as_torch():
    ours = list(data.DataLoader(OurSamples(tg), batch_size=3))
    theirs = list(torch_data.DataLoader(TheirSamples(torch), batch_size=3))
    assert [as_lists(batch) for batch in ours] == [as_lists(batch) for batch in theirs]
    assert ours[0]["x"].dtype == np.float64  # Python floats collate as float64, as PyTorch
    assert ours[0]["z"].dtype == np.float32


def test_shuffle_follows_manual_seed_and_a_given_generator():
    dataset = data.TensorDataset(tg.arange(20))

    def order(**options):
        return [value for (batch,) in data.DataLoader(dataset, 4, shuffle=True, **options)
                for value in batch.tolist()]  # fmt: skip

    tg.manual_seed(0)
    first = order()
    tg.manual_seed(0)
    assert order() == first
    assert sorted(first) == list(range(20))
    assert first != list(range(20))
    assert order(generator=np.random.default_rng(1)) == order(generator=np.random.default_rng(1))


def test_a_custom_collate_and_the_refusals():
    loader = data.DataLoader(data.TensorDataset(tg.ones(4, 2)), 2, collate_fn=len)
    assert list(loader) == [2, 2]
    with pytest.raises(ValueError, match="size mismatch"):
        data.TensorDataset(tg.ones(3), tg.ones(4))
    with pytest.raises(NotImplementedError, match="__getitem__"):
        data.Dataset()[0]
    with pytest.raises(TypeError, match="default_collate"):
        data.default_collate([object(), object()])
    assert tg.utils.data.DataLoader is data.DataLoader
