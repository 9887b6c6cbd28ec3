"""tinygrad_ops: a small reverse-mode autograd engine on numpy.

>>> import tinygrad_ops as tg
>>> x = tg.Tensor([2.0], requires_grad=True)
>>> (x * x + 3 * x).sum().backward()
>>> x.grad.numpy()
array([7.], dtype=float32)
"""

import builtins

from . import functional, nn, optim, utils
from .autograd.backward import grad
from .autograd.function import Function
from .control_flow import scan
from .creation import (
    arange,
    eye,
    full,
    linspace,
    logspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    zeros,
    zeros_like,
)
from .gradcheck import GradcheckError, gradcheck
from .mode import (
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from .nn.init import manual_seed
from .ops.base import is_tensor
from .ops.einsum import einsum
from .ops.indexing import (
    argsort,
    gather,
    masked_fill,
    nonzero,
    scatter_add,
    sort,
    topk,
)
from .ops.movement import (
    chunk,
    diagonal,
    flip,
    meshgrid,
    moveaxis,
    movedim,
    repeat_interleave,
    roll,
    split,
    tril,
    triu,
)
from .ops.scatter_reduce import scatter, scatter_reduce
from .scheduler import (
    available_schedulers,
    backward_plan,
    get_default_scheduler,
    register_scheduler,
    set_default_scheduler,
)
from .serialize import CheckpointError, load, save
from .tensor import Tensor, concatenate, from_numpy, maximum, stack, where
from .tensor_functions import bmm, cat, dot, minimum, outer
from .tensor_reduce import std_mean, var_mean

__version__ = "0.1.0"

__all__ = [
    "CheckpointError",
    "CompileError",
    "Function",
    "GradcheckError",
    "Tensor",
    "arange",
    "argsort",
    "available_schedulers",
    "backward_plan",
    "bmm",
    "cat",
    "chunk",
    "compile",
    "concatenate",
    "detect_anomaly",
    "diagonal",
    "dot",
    "einsum",
    "enable_grad",
    "eye",
    "flip",
    "from_numpy",
    "full",
    "functional",
    "gather",
    "get_default_scheduler",
    "grad",
    "gradcheck",
    "inference_mode",
    "is_grad_enabled",
    "is_tensor",
    "linspace",
    "load",
    "logspace",
    "manual_seed",
    "masked_fill",
    "maximum",
    "meshgrid",
    "minimum",
    "moveaxis",
    "movedim",
    "nn",
    "no_grad",
    "nonzero",
    "ones",
    "ones_like",
    "optim",
    "outer",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "register_scheduler",
    "repeat_interleave",
    "roll",
    "save",
    "scan",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "set_default_scheduler",
    "set_grad_enabled",
    "sort",
    "split",
    "stack",
    "std_mean",
    "tensor",
    "topk",
    "tril",
    "triu",
    "utils",
    "var_mean",
    "where",
    "zeros",
    "zeros_like",
]

# PyTorch's factory `tg.tensor([1, 2])` (int64, as torch.tensor). It takes the package's
# attribute `tensor` from the submodule of that name, which stays importable by its path
# (`from tinygrad_ops.tensor import Tensor`; `import tinygrad_ops.tensor as m` gets this
# function: use `sys.modules["tinygrad_ops.tensor"]` for the module).
from .creation import tensor

# PyTorch's module-level functions (`tg.exp(x)`, `tg.max(outputs, 1)`) and dtype names
# (`tg.float32`, `tg.long`): see torch_functions.py. Those named like a Python builtin
# (sum, max, abs, ...) stay out of `__all__`, so that `from tinygrad_ops import *` keeps
# the builtins; `tg.sum` is there all the same.
from .torch_functions import DTYPES, FUNCTIONS

globals().update(FUNCTIONS)
globals().update(DTYPES)
__all__ += [name for name in FUNCTIONS if name not in dir(builtins)]


def __getattr__(name):
    """`tg.compile`, `tg.CompileError`, `tg.CompiledFunction`: the jit, imported on first use
    (`import tinygrad_ops` does not load it)."""
    if name in ("compile", "CompileError", "CompiledFunction"):
        from . import jit

        return getattr(jit, name)
    raise AttributeError(f"module 'tinygrad_ops' has no attribute {name!r}")
