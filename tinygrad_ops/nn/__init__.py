"""Neural-network building blocks: `Module`, `Parameter` and layers, named as in
`torch.nn` so that a model definition and a state dict carry over.

>>> import tinygrad_ops as tg
>>> from tinygrad_ops import nn
>>> tg.manual_seed(0)
>>> model = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
>>> model(tg.zeros(4, 2)).shape
(4, 1)
"""

from .activation import (
    CELU,
    ELU,
    GELU,
    SELU,
    Dropout,
    Flatten,
    Hardsigmoid,
    Hardswish,
    LogSigmoid,
    Mish,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softplus,
    Softsign,
    Tanh,
)
from .cnn import SmallCNN, Unflatten
from .container import Sequential
from .conv import AvgPool1d, AvgPool2d, Conv1d, Conv2d, MaxPool1d, MaxPool2d
from .init import get_rng_state, manual_seed, set_rng_state
from .linear import Linear
from .mlp import MLP
from .module import Module, Parameter, RemovableHandle
from .normalization import BatchNorm1d, LayerNorm, RMSNorm
from .rnn import RNN, RNNCell

__all__ = [
    "CELU",
    "ELU",
    "GELU",
    "MLP",
    "RNN",
    "SELU",
    "AvgPool1d",
    "AvgPool2d",
    "BatchNorm1d",
    "Conv1d",
    "Conv2d",
    "Dropout",
    "Flatten",
    "Hardsigmoid",
    "Hardswish",
    "LayerNorm",
    "Linear",
    "LogSigmoid",
    "MaxPool1d",
    "MaxPool2d",
    "Mish",
    "Module",
    "Parameter",
    "RMSNorm",
    "RNNCell",
    "ReLU",
    "ReLU6",
    "RemovableHandle",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "SmallCNN",
    "Softplus",
    "Softsign",
    "Tanh",
    "Unflatten",
    "get_rng_state",
    "manual_seed",
    "set_rng_state",
]
