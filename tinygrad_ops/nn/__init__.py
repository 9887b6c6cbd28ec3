"""Neural-network building blocks: `Module`, `Parameter` and layers, named as in
`torch.nn` so that a model definition and a state dict carry over.

>>> import tinygrad_ops as tg
>>> from tinygrad_ops import nn
>>> tg.manual_seed(0)
>>> model = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
>>> model(tg.zeros(4, 2)).shape
(4, 1)
"""

from . import functional, utils  # (tg.nn.functional and tg.nn.utils, as torch.nn's)
from .activation import (
    CELU,
    ELU,
    GELU,
    SELU,
    Dropout,
    Flatten,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    Identity,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Softsign,
    Tanh,
)
from .attention import MultiheadAttention
from .cnn import SmallCNN, Unflatten
from .container import ModuleDict, ModuleList, Sequential
from .conv import AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, Conv1d, Conv2d, MaxPool1d, MaxPool2d
from .conv_transpose import ConvTranspose2d
from .embedding import Embedding
from .gated import GRU, LSTM, GRUCell, LSTMCell
from .init import get_rng_state, manual_seed, set_rng_state
from .linear import Linear
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .mlp import MLP
from .module import Module, Parameter, RemovableHandle
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    LayerNorm,
    RMSNorm,
)
from .rnn import RNN, RNNCell
from .transformer import (
    TransformerEncoder,
    TransformerEncoderLayer,
    generate_square_subsequent_mask,
)

__all__ = [
    "CELU",
    "ELU",
    "GELU",
    "GRU",
    "LSTM",
    "MLP",
    "RNN",
    "SELU",
    "AdaptiveAvgPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "BCELoss",
    "BCEWithLogitsLoss",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "ConvTranspose2d",
    "CrossEntropyLoss",
    "Dropout",
    "Embedding",
    "Flatten",
    "GRUCell",
    "GroupNorm",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "HuberLoss",
    "Identity",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "KLDivLoss",
    "L1Loss",
    "LSTMCell",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LogSigmoid",
    "LogSoftmax",
    "MSELoss",
    "MaxPool1d",
    "MaxPool2d",
    "Mish",
    "Module",
    "ModuleDict",
    "ModuleList",
    "MultiheadAttention",
    "NLLLoss",
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
    "SmoothL1Loss",
    "Softmax",
    "Softplus",
    "Softsign",
    "Tanh",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "Unflatten",
    "functional",
    "generate_square_subsequent_mask",
    "get_rng_state",
    "manual_seed",
    "set_rng_state",
    "utils",
]
