"""`tg.utils.data`: PyTorch's Dataset, TensorDataset and DataLoader (torch.utils.data)."""

from . import data

__all__ = ["data"]
