"""torch.utils.data's names: `Dataset`, `TensorDataset` and a `DataLoader` over a dataset,
with PyTorch's signature and defaults (batch_size=1, shuffle=False). The batching and
shuffling are `tinygrad_ops.data.DataLoader`'s; this loader reads its batches from a
dataset and stacks them as PyTorch's default collate does.

>>> import tinygrad_ops as tg
>>> from tinygrad_ops.utils.data import DataLoader, TensorDataset
>>> dataset = TensorDataset(tg.arange(10.0).reshape(5, 2), tg.arange(5))
>>> len(dataset), [y.tolist() for _, y in DataLoader(dataset, batch_size=2)]
(5, [[0, 1], [2, 3], [4]])
"""

import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from .. import data
from ..creation import default_generator
from ..ops.base import is_tensor
from ..tensor import Tensor, stack


class Dataset:
    """A map-style dataset, as torch.utils.data.Dataset: subclass it with `__getitem__(i)`
    (one sample) and `__len__()` (the number of samples)."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class TensorDataset(Dataset):
    """Samples that are rows of tensors of one length: `dataset[i]` is (t[i] for t in
    tensors), as torch.utils.data.TensorDataset.

    >>> import tinygrad_ops as tg
    >>> features, labels = TensorDataset(tg.ones(3, 2), tg.tensor([7, 8, 9]))[1]
    >>> features.tolist(), labels.item()
    ([1.0, 1.0], 8)
    """

    def __init__(self, *tensors):
        if not tensors or not all(is_tensor(t) and t.ndim >= 1 for t in tensors):
            raise TypeError("TensorDataset: give one or more Tensors of at least one dim")
        if any(t.shape[0] != tensors[0].shape[0] for t in tensors):
            shapes = ", ".join(str(t.shape) for t in tensors)
            raise ValueError(f"TensorDataset: size mismatch between tensors: {shapes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class DataLoader(data.DataLoader):
    """Batches of a dataset, as torch.utils.data.DataLoader: `batch_size` samples at a time
    (the last batch smaller unless drop_last), reshuffled every pass with `shuffle=True`,
    drawn from `generator` (a numpy Generator) or else the shared generator that
    `tg.manual_seed` reseeds. Each batch is `collate_fn(samples)`, by default PyTorch's
    default collate: tensors, arrays and numbers stacked along a new first dim, tuples and
    dicts collated field by field. A TensorDataset's batches are read by one indexing.
    """

    def __init__(
        self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None, generator=None
    ):
        if batch_size is None:
            raise NotImplementedError("DataLoader: batch_size=None (no batching) is not supported")
        self.dataset = dataset
        self.collate_fn = collate_fn
        self._generator = generator
        self._batching(len(dataset), batch_size, shuffle, drop_last)

    @property
    def generator(self):
        return default_generator() if self._generator is None else self._generator

    def batch(self, indices):
        if self.collate_fn is None and isinstance(self.dataset, TensorDataset):
            return [tensor[indices] for tensor in self.dataset.tensors]
        samples = [self.dataset[int(index)] for index in indices]
        return (self.collate_fn or default_collate)(samples)


def default_collate(samples):
    """PyTorch's default collate: a list of samples as one batch. Tensors (and arrays) are
    stacked along a new first dim, numbers made a tensor (Python floats as float64, ints as
    int64, as PyTorch), tuples/lists and dicts collated field by field, strings kept as a list.

    >>> import tinygrad_ops as tg
    >>> batch = default_collate([(tg.ones(2), 0), (tg.zeros(2), 1)])
    >>> batch[0].shape, batch[1].tolist()
    ((2, 2), [0, 1])
    """
    first = samples[0]
    if is_tensor(first):
        return stack(samples)
    if isinstance(first, np.ndarray):
        return Tensor(np.stack(samples))
    if isinstance(first, (bool, np.bool_)):
        return Tensor(np.array(samples, dtype=bool))
    if isinstance(first, numbers.Integral):
        return Tensor(np.array(samples, dtype=np.int64))
    if isinstance(first, numbers.Real):
        return Tensor(np.array(samples, dtype=np.float64))
    if isinstance(first, str):
        return list(samples)
    if isinstance(first, Mapping):
        return {key: default_collate([sample[key] for sample in samples]) for key in first}
    if isinstance(first, Sequence):
        if any(len(sample) != len(first) for sample in samples):
            raise RuntimeError("default_collate: each sample in the batch must have one length")
        collated = [default_collate(list(field)) for field in zip(*samples, strict=True)]
        return tuple(collated) if isinstance(first, tuple) else collated
    raise TypeError(
        f"default_collate: a batch must hold tensors, arrays, numbers, strings, dicts or "
        f"sequences, got {type(first).__name__}"
    )


__all__ = ["DataLoader", "Dataset", "TensorDataset", "default_collate"]
