"""tinygrad_ops/torch_functions.py: PyTorch's module-level functions are the Tensor methods
(values and gradients against torch's functions in float64), and the dtype names."""

import builtins

import numpy as np
import pytest
import torch

import tinygrad_ops as tg
from tinygrad_ops.torch_functions import EXAMPLES

VALUES = np.array([[0.5, -1.5, 2.0], [3.0, 0.25, -0.75]])
# name -> (args after the tensor, kwargs), for torch.<name> and tg.<name> alike
CALLS = {
    "sum": ((), {"dim": 1}),
    "mean": ((0,), {}),
    "max": ((1,), {}),
    "min": ((), {}),
    "argmax": ((), {"dim": 1}),
    "softmax": ((), {"dim": 1}),
    "log_softmax": ((-1,), {}),
    "clamp": ((), {"min": 0.0}),
    "clip": ((-1.0, 1.0), {}),
    "pow": ((3,), {}),
    "transpose": ((0, 1), {}),
    "unsqueeze": ((1,), {}),
    "permute": (((1, 0),), {}),
    "norm": ((), {"dim": 1}),
    "cumsum": ((1,), {}),
    "std": ((1,), {}),
    "var": ((), {}),
    "prod": ((1,), {}),
    "logsumexp": ((1,), {}),
    "amax": ((0,), {}),
    "reshape": (((6,),), {}),
    "flatten": ((), {}),
    "matmul": ((), {}),
    "mm": ((), {}),
    "cummax": ((1,), {}),
    "logcumsumexp": ((1,), {}),
    "fmod": ((0.7,), {}),
    "remainder": ((0.7,), {}),
    "narrow": ((1, 0, 2), {}),
    "swapaxes": ((0, 1), {}),
    "lerp": ((), {}),
    "nan_to_num": ((), {"nan": 1.5}),
}
# The functions defined on part of the line: their inputs are moved there.
DOMAINS = {
    "log": lambda v: np.abs(v) + 0.5,
    "sqrt": lambda v: np.abs(v) + 0.5,
    "rsqrt": lambda v: np.abs(v) + 0.5,
    "log1p": lambda v: np.abs(v) + 0.5,
    "log2": lambda v: np.abs(v) + 0.5,
    "log10": lambda v: np.abs(v) + 0.5,
    "acosh": lambda v: np.abs(v) + 1.5,
    "atanh": lambda v: v / 4,
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_module_function_matches_torch(name):
    args, kwargs = CALLS.get(name, ((), {}))
    data = DOMAINS.get(name, np.asarray)(VALUES)
    ours = tg.Tensor(data.copy(), requires_grad=True)
    theirs = torch.tensor(data.copy(), requires_grad=True)
    if name in ("matmul", "mm"):
        args_ours, args_theirs = (ours.T,), (theirs.T,)
    elif name in ("allclose", "equal", "eq", "logaddexp", "atan2", "arctan2") or name in (
        "logical_and",
        "logical_or",
        "logical_xor",
    ):  # vs a copy
        other = data.copy()
        other[0, 0] += 1e-9
        args_ours, args_theirs = (tg.Tensor(other),), (torch.tensor(other),)
    elif name == "lerp":  # the end a copy, the weight a number
        args_ours, args_theirs = (tg.Tensor(data * 2.0), 0.3), (torch.tensor(data * 2.0), 0.3)
    elif name == "isclose":
        args_ours, args_theirs = (tg.Tensor(data + 1e-9),), (torch.tensor(data + 1e-9),)
    elif name == "index_select":
        args_ours, args_theirs = (0, tg.tensor([1, 0, 1])), (0, torch.tensor([1, 0, 1]))
    else:
        args_ours = args_theirs = args
    out = getattr(tg, name)(ours, *args_ours, **kwargs)
    expected = getattr(torch, name)(theirs, *args_theirs, **kwargs)
    if isinstance(expected, tuple):  # (values, indices)
        out, expected = out[0], expected[0]
    if not isinstance(expected, torch.Tensor):  # numel
        assert out == expected
        return
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12)
    if expected.requires_grad and expected.dtype.is_floating_point:
        weights = np.random.default_rng(0).standard_normal(tuple(expected.shape))
        (out * tg.Tensor(weights)).sum().backward()
        (expected * torch.tensor(weights)).sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), atol=1e-12)


def test_module_function_names_its_first_argument():
    with pytest.raises(TypeError, match=r"tg\.exp: the first argument must be a Tensor, got list"):
        tg.exp([1.0, 2.0])


def test_star_import_keeps_pythons_builtins():
    namespace = {}
    exec("from tinygrad_ops import *", namespace)
    for name in ("sum", "max", "min", "abs", "all", "any", "round", "pow"):
        assert name not in namespace
        assert getattr(tg, name) is not getattr(builtins, name)
    assert namespace["exp"] is tg.exp


def test_pytorch_dtype_names_are_numpys_dtypes():
    assert tg.Tensor([1.0], dtype=tg.float64).dtype == np.float64
    assert tg.zeros((2,), dtype=tg.long).dtype == np.int64
    assert tg.Tensor([1.0]).dtype == tg.float32
    assert (tg.half, tg.double) == (np.float16, np.float64)


def test_lerp_with_a_tensor_weight_and_nan_to_num_at_non_finite_values_match_torch():
    start, end, weight = np.array([1.0, 2.0]), np.array([3.0, 5.0]), np.array([0.25, 0.75])
    ours = [tg.Tensor(v.copy(), requires_grad=True) for v in (start, end, weight)]
    theirs = [torch.tensor(v.copy(), requires_grad=True) for v in (start, end, weight)]
    tg.lerp(*ours).sum().backward()
    torch.lerp(*theirs).sum().backward()
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-12)
    values = np.array([1.0, np.nan, np.inf, -np.inf])
    x, torch_x = tg.Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    out, expected = tg.nan_to_num(x, posinf=5.0), torch.nan_to_num(torch_x, posinf=5.0)
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), torch_x.grad.numpy())
    both_nan = tg.isclose(tg.Tensor([np.nan, 1.0]), tg.Tensor([np.nan, 1.1]), equal_nan=True)
    assert both_nan.tolist() == [True, False]
