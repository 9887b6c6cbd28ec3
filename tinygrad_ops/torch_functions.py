"""PyTorch's module-level functions over one tensor: `tg.exp(x)` is `x.exp()`,
`tg.max(outputs, 1)` is `outputs.max(1)` (the `(values, indices)` of the CIFAR tutorial's
`_, predicted = torch.max(outputs, 1)`), `tg.sum(x, dim=1)` is `x.sum(dim=1)`.

Each is the Tensor method of the same name, called on the first argument with the rest:
one table, `EXAMPLES`, names them with the example their docstring runs. The dtypes under
PyTorch's names (`tg.float32`, `tg.long`, ...) are numpy's.
"""

import numpy as np

from .ops.base import is_tensor

# name -> the example in its docstring (x = [[1., -2.], [3., 4.]], run as a doctest).
EXAMPLES = {
    "abs": ("tg.abs(x).tolist()", "[[1.0, 2.0], [3.0, 4.0]]"),
    "acosh": ("tg.acosh(x.abs() + 1).tolist()[0][0]", "1.316957950592041"),
    "all": ("tg.all(x > 0).item()", "False"),
    "allclose": ("tg.allclose(x, x + 1e-9)", "True"),
    "amax": ("tg.amax(x, 1).tolist()", "[1.0, 4.0]"),
    "amin": ("tg.amin(x, 1).tolist()", "[-2.0, 3.0]"),
    "any": ("tg.any(x > 3).item()", "True"),
    "argmax": ("tg.argmax(x, dim=1).tolist()", "[0, 1]"),
    "argmin": ("tg.argmin(x, dim=1).tolist()", "[1, 0]"),
    "atan2": ("tg.atan2(x, x.abs()).tolist()[0]", "[0.7853981256484985, -0.7853981256484985]"),
    "arctan2": ("tg.arctan2(x * 0 + 1, x * 0 - 1).tolist()[0][0]", "2.356194496154785"),
    "asinh": ("tg.asinh(x.abs() * 0).tolist()", "[[0.0, 0.0], [0.0, 0.0]]"),
    "atanh": ("tg.atanh(x.abs() * 0).tolist()", "[[0.0, 0.0], [0.0, 0.0]]"),
    "ceil": ("tg.ceil(x / 2).tolist()", "[[1.0, -1.0], [2.0, 2.0]]"),
    "clamp": ("tg.clamp(x, min=0.0).tolist()", "[[1.0, 0.0], [3.0, 4.0]]"),
    "clip": ("tg.clip(x, -1.0, 1.0).tolist()", "[[1.0, -1.0], [1.0, 1.0]]"),
    "clone": ("tg.clone(x).tolist()", "[[1.0, -2.0], [3.0, 4.0]]"),
    "cos": ("tg.cos(x * 0).tolist()", "[[1.0, 1.0], [1.0, 1.0]]"),
    "cosh": ("tg.cosh(x * 0).tolist()", "[[1.0, 1.0], [1.0, 1.0]]"),
    "cummax": ("tg.cummax(x, dim=0).values.tolist()", "[[1.0, -2.0], [3.0, 4.0]]"),
    "cumsum": ("tg.cumsum(x, dim=1).tolist()", "[[1.0, -1.0], [3.0, 7.0]]"),
    "detach": ("tg.detach(x).requires_grad", "False"),
    "diag": ("tg.diag(x).tolist()", "[1.0, 4.0]"),
    "diagonal": ("tg.diagonal(x, 1).tolist()", "[-2.0]"),
    "eq": ("tg.eq(x, 1.0).tolist()", "[[True, False], [False, False]]"),
    "equal": ("tg.equal(x, x)", "True"),
    "erf": ("tg.erf(x.abs() * 0).tolist()", "[[0.0, 0.0], [0.0, 0.0]]"),
    "exp": ("tg.exp(x * 0).tolist()", "[[1.0, 1.0], [1.0, 1.0]]"),
    "exp2": ("tg.exp2(x).tolist()", "[[2.0, 0.25], [8.0, 16.0]]"),
    "expm1": ("tg.expm1(x.abs() * 0).tolist()", "[[0.0, 0.0], [0.0, 0.0]]"),
    "flatten": ("tg.flatten(x).tolist()", "[1.0, -2.0, 3.0, 4.0]"),
    "floor": ("tg.floor(x / 2).tolist()", "[[0.0, -1.0], [1.0, 2.0]]"),
    "fmod": ("tg.fmod(x, 3.0).tolist()", "[[1.0, -2.0], [0.0, 1.0]]"),
    "index_select": ("tg.index_select(x, 0, tg.tensor([1])).tolist()", "[[3.0, 4.0]]"),
    "isclose": ("tg.isclose(x, x + 1e-9).all().item()", "True"),
    "is_floating_point": ("tg.is_floating_point(x)", "True"),
    "isfinite": ("tg.isfinite(x).all().item()", "True"),
    "isinf": ("tg.isinf(x).any().item()", "False"),
    "isnan": ("tg.isnan(x).any().item()", "False"),
    "lerp": ("tg.lerp(x, x * 3, 0.5).tolist()", "[[2.0, -4.0], [6.0, 8.0]]"),
    "log": ("tg.log(x.abs()).tolist()[0][0]", "0.0"),
    "log10": ("tg.log10(x.abs() * 10).tolist()[0]", "[1.0, 1.3010300397872925]"),
    "log1p": ("tg.log1p(x.abs() * 0).tolist()", "[[0.0, 0.0], [0.0, 0.0]]"),
    "log2": ("tg.log2(x.abs()).tolist()", "[[0.0, 1.0], [1.5849624872207642, 2.0]]"),
    "log_softmax": ("tg.log_softmax(x * 0, dim=1).exp().tolist()", "[[0.5, 0.5], [0.5, 0.5]]"),
    "logical_and": ("tg.logical_and(x > 0, x > 2).tolist()", "[[False, False], [True, True]]"),
    "logical_not": ("tg.logical_not(x > 0).tolist()", "[[False, True], [False, False]]"),
    "logical_or": ("tg.logical_or(x > 3, x < 0).tolist()", "[[False, True], [False, True]]"),
    "logical_xor": ("tg.logical_xor(x > 0, x > 2).tolist()", "[[True, False], [False, False]]"),
    "logaddexp": ("tg.logaddexp(x * 0, x * 0).exp().tolist()", "[[2.0, 2.0], [2.0, 2.0]]"),
    "logcumsumexp": ("tg.logcumsumexp(x * 0, dim=1).exp().tolist()", "[[1.0, 2.0], [1.0, 2.0]]"),
    "logsumexp": ("tg.logsumexp(x * 0, 1).exp().tolist()", "[2.0, 2.0]"),
    "matmul": ("tg.matmul(x, x).tolist()", "[[-5.0, -10.0], [15.0, 10.0]]"),
    "max": ("tg.max(x, 1)[1].tolist()", "[0, 1]"),
    "mean": ("tg.mean(x, dim=0).tolist()", "[2.0, 1.0]"),
    "min": ("tg.min(x).item()", "-2.0"),
    "mm": ("tg.mm(x, x).tolist()", "[[-5.0, -10.0], [15.0, 10.0]]"),
    "nan_to_num": ("tg.nan_to_num(tg.Tensor([float('nan'), 1.0]), nan=9.0).tolist()", "[9.0, 1.0]"),
    "narrow": ("tg.narrow(x, 1, 0, 1).tolist()", "[[1.0], [3.0]]"),
    "norm": ("tg.norm(x, dim=1).tolist()[1]", "5.0"),
    "numel": ("tg.numel(x)", "4"),
    "permute": ("tg.permute(x, (1, 0)).tolist()", "[[1.0, 3.0], [-2.0, 4.0]]"),
    "pow": ("tg.pow(x, 2).tolist()", "[[1.0, 4.0], [9.0, 16.0]]"),
    "prod": ("tg.prod(x, 1).tolist()", "[-2.0, 12.0]"),
    "relu": ("tg.relu(x).tolist()", "[[1.0, 0.0], [3.0, 4.0]]"),
    "remainder": ("tg.remainder(x, 3.0).tolist()", "[[1.0, 1.0], [0.0, 1.0]]"),
    "reshape": ("tg.reshape(x, (4,)).tolist()", "[1.0, -2.0, 3.0, 4.0]"),
    "round": ("tg.round(x / 4).tolist()", "[[0.0, -0.0], [1.0, 1.0]]"),
    "rsqrt": ("tg.rsqrt(x.abs()).tolist()[1]", "[0.5773502588272095, 0.5]"),
    "sigmoid": ("tg.sigmoid(x * 0).tolist()", "[[0.5, 0.5], [0.5, 0.5]]"),
    "sign": ("tg.sign(x).tolist()", "[[1.0, -1.0], [1.0, 1.0]]"),
    "sin": ("tg.sin(x * 0).abs().tolist()", "[[0.0, 0.0], [0.0, 0.0]]"),
    "sinh": ("tg.sinh(x.abs() * 0).tolist()", "[[0.0, 0.0], [0.0, 0.0]]"),
    "softmax": ("tg.softmax(x * 0, dim=1).tolist()", "[[0.5, 0.5], [0.5, 0.5]]"),
    "sqrt": ("tg.sqrt(x.abs()).tolist()[1][1]", "2.0"),
    "square": ("tg.square(x).tolist()", "[[1.0, 4.0], [9.0, 16.0]]"),
    "squeeze": ("tg.squeeze(x[None]).shape", "(2, 2)"),
    "std": ("tg.std(x[1]).item()", "0.7071067690849304"),
    "sum": ("tg.sum(x, dim=1).tolist()", "[-1.0, 7.0]"),
    "swapaxes": ("tg.swapaxes(x, 0, 1).tolist()", "[[1.0, 3.0], [-2.0, 4.0]]"),
    "t": ("tg.t(x).tolist()", "[[1.0, 3.0], [-2.0, 4.0]]"),
    "tanh": ("tg.tanh(x.abs() * 0).tolist()", "[[0.0, 0.0], [0.0, 0.0]]"),
    "trace": ("tg.trace(x).item()", "5.0"),
    "transpose": ("tg.transpose(x, 0, 1).tolist()", "[[1.0, 3.0], [-2.0, 4.0]]"),
    "trunc": ("tg.trunc(x / 3).tolist()", "[[0.0, -0.0], [1.0, 1.0]]"),
    "unbind": ("[row.tolist() for row in tg.unbind(x)]", "[[1.0, -2.0], [3.0, 4.0]]"),
    "unsqueeze": ("tg.unsqueeze(x, 0).shape", "(1, 2, 2)"),
    "var": ("tg.var(x[1]).item()", "0.5"),
}


def _function(name, call, result):
    """The module-level function `name`: the Tensor method on its first argument."""

    def function(input, *args, **kwargs):
        if not is_tensor(input):
            raise TypeError(
                f"tg.{name}: the first argument must be a Tensor, got {type(input).__name__} "
                f"(tg.tensor(...) makes one)"
            )
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (
        f"`tg.{name}(x, ...)` is `x.{name}(...)`, as PyTorch's `torch.{name}`.\n\n"
        f">>> import tinygrad_ops as tg\n"
        f">>> x = tg.Tensor([[1.0, -2.0], [3.0, 4.0]])\n"
        f">>> {call}\n{result}\n"
    )
    return function


FUNCTIONS = {name: _function(name, *example) for name, example in EXAMPLES.items()}
globals().update(FUNCTIONS)  # (each is a module attribute, so that doctest finds its example)

# PyTorch's names of the dtypes: `tg.Tensor(data, dtype=tg.float32)`, `x.dtype == tg.long`.
DTYPES = {
    "float16": np.dtype(np.float16),
    "half": np.dtype(np.float16),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "double": np.dtype(np.float64),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "long": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8),
}
