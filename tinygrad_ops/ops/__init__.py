"""The primitives: one `Op` subclass each, forward and backward side by side.

The families: `elementwise`, `reduce`, `shape`, `linalg` (matmul, linear), and the fused ops
whose backward is derived by hand in `docs/derivations.md` (`activations`, `norms`,
`losses`, `conv`, `pool`; these two over the `windows` moves): one node with a hand-written
rule is several times faster than a graph of small ops (fewer temporaries, no tape per
step), and the derivation is the lesson. Their helpers: `kernels` (numpy speed helpers),
`dual` (array-or-Tensor helpers), `checks` (argument checks).

`PRIMITIVES` is the one op table; `REGISTRY` maps each primitive's name to its class. The
engine, the schedulers and the renderer read it (to list ops, find Jacobian rules, and label
nodes); `register` adds a user's op class.
"""

from .activations import Dropout, Erf, Gelu, LeakyRelu, LogSoftmax, Softmax
from .binary import Atan2, CopySign, Fmod, LogAddExp, Remainder, RoundedDivide, Xlogy
from .conv import Conv2d
from .cumulative import Cumprod, Cumsum, LogCumSumExp
from .einsum import Einsum
from .elementwise import (
    Abs,
    Add,
    Cast,
    Clip,
    Div,
    Fill,
    Maximum,
    Minimum,
    Mul,
    Neg,
    Pow,
    PowScalar,
    Relu,
    Sub,
    Where,
)
from .indexing import Gather, ScatterAddAlong, ScatterAlong
from .linalg import Linear, MatMul
from .losses import BinaryCrossEntropy, CrossEntropy, MSELoss
from .norms import BatchNorm, LayerNorm, RMSNorm
from .pointwise import (
    Elu,
    GeluTanh,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LogSigmoid,
    Mish,
    Relu6,
    Silu,
    Softplus,
    Softsign,
)
from .pool import MaxPool2d
from .reduce import Max, Min, Sum, VectorNorm
from .scatter_reduce import ScatterReduce
from .shape import (
    BroadcastTo,
    Concatenate,
    Diagonal,
    GetItem,
    Reshape,
    ScatterAdd,
    SetItem,
    Stack,
    Transpose,
)
from .unary import (
    Acos,
    Acosh,
    Asin,
    Asinh,
    Atan,
    Atanh,
    Ceil,
    Cos,
    Cosh,
    Exp,
    Exp2,
    Expm1,
    Floor,
    Log,
    Log1p,
    Log2,
    Log10,
    Round,
    Sigmoid,
    Sign,
    Sin,
    Sinh,
    Sqrt,
    Tan,
    Tanh,
    Trunc,
)
from .unbind import Row, Unbind
from .windows import AddWindows, Pad, SlidingWindows

PRIMITIVES = (
    # elementwise
    Add, Sub, Mul, Div, Neg, Pow, PowScalar, Exp, Log, Sqrt, Abs, Tanh, Sigmoid, Relu,
    Maximum, Minimum, Where, Clip, Cast, Fill,
    # functions of one tensor (ops/unary.py), of two (ops/binary.py)
    Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Log2, Log10, Exp2,
    Log1p, Expm1, Sign, Floor, Ceil, Round, Trunc,
    LogAddExp, Atan2, CopySign, Fmod, Remainder, RoundedDivide, Xlogy,
    # reductions, cumulative reductions
    Sum, Max, Min, VectorNorm, Cumsum, Cumprod, LogCumSumExp,
    # shape
    Reshape, Transpose, BroadcastTo, GetItem, SetItem, ScatterAdd, Stack, Concatenate,
    Diagonal, Unbind, Row,
    # linear algebra
    MatMul, Linear,
    # activations, norms, losses (fused, hand-derived backward)
    Erf, Gelu, LeakyRelu, Softmax, LogSoftmax, Dropout, LayerNorm, RMSNorm, BatchNorm,
    Softplus, Silu, Mish, Elu, Hardsigmoid, Hardswish, LogSigmoid, Softsign, Relu6, Hardtanh,
    GeluTanh,
    CrossEntropy, MSELoss, BinaryCrossEntropy,
    # windows, convolution, pooling
    Pad, SlidingWindows, AddWindows, Conv2d, MaxPool2d,
    # indexing along a dim
    Gather, ScatterAddAlong, ScatterAlong, ScatterReduce,
    # Einstein summation
    Einsum,
)  # fmt: skip
REGISTRY = {op.__name__: op for op in PRIMITIVES}


def register(op_class):
    """Add an op class to the registry (user extensions use this)."""
    REGISTRY[op_class.__name__] = op_class
    return op_class


__all__ = ["PRIMITIVES", "REGISTRY", "register", *(op.__name__ for op in PRIMITIVES)]
