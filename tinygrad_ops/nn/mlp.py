"""`MLP`: the multi-layer perceptron `tinygrad-ops train` builds, as a module of its own."""

from .activation import GELU, Dropout, ReLU, Sigmoid, Tanh
from .container import Sequential
from .linear import Linear
from .normalization import BatchNorm1d, LayerNorm, RMSNorm

ACTIVATIONS = {"relu": ReLU, "tanh": Tanh, "gelu": GELU, "sigmoid": Sigmoid}
NORMS = {"layer": LayerNorm, "batch": BatchNorm1d, "rms": RMSNorm}


def _choice(argument, value, table):
    if value not in table:
        raise ValueError(f"MLP: {argument}={value!r} is not one of {', '.join(table)}")
    return table[value]


class MLP(Sequential):
    """Per hidden size: Linear -> [norm] -> activation -> [dropout]; then a Linear head.

    A `Sequential` underneath, so its parameters are named "0.weight", "0.bias", ... as a
    PyTorch `nn.Sequential` of the same layers would name them (checkpoints carry over).
    `activation` is one of relu, tanh, gelu, sigmoid; `norm` one of None (or "none"),
    layer, batch, rms; `dropout` is the probability after each hidden activation.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import nn
    >>> model = nn.MLP(4, [8], 3, norm="layer", dropout=0.1)
    >>> [type(layer).__name__ for layer in model]
    ['Linear', 'LayerNorm', 'ReLU', 'Dropout', 'Linear']
    >>> model(tg.zeros(5, 4)).shape
    (5, 3)
    """

    def __init__(
        self, in_features, hidden, out_features, activation="relu", norm=None, dropout=0.0
    ):
        activation_class = _choice("activation", activation, ACTIVATIONS)
        norm_class = None if norm in (None, "none") else _choice("norm", norm, NORMS)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"MLP: dropout={dropout!r} must be in [0, 1)")
        layers = []
        width = in_features
        for size in hidden:
            layers.append(Linear(width, size))
            if norm_class is not None:
                layers.append(norm_class(size))
            layers.append(activation_class())
            if dropout > 0:
                layers.append(Dropout(dropout))
            width = size
        layers.append(Linear(width, out_features))
        super().__init__(*layers)
