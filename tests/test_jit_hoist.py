"""What tg.compile works out once (jit/specialise.py): the parts of an inlined rule that
depend only on what the capture fixed (shapes, dtypes, options, needs_input_grad) are
computed when the replay is written, and the replay keeps the per-step work, bit for bit
the eager step's; a new shape makes a new program with its own values."""

import ast
import re

import numpy as np
import pytest

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import optim
from tinygrad_ops.jit import inline
from tinygrad_ops.jit.specialise import Fact, Specialise, array_fact, drop_dead
from tinygrad_ops.ops import shape, unbind
from tinygrad_ops.ops.base import Op
from tinygrad_ops.ops.kernels import RowBuffers, as_matrix, reshaped


def rnn_run(compiled, shapes):
    """A tanh RNN step (x[t] @ w + h @ u) over inputs of each of `shapes`: the losses and
    the gradients of every call, and the step."""
    generator = np.random.default_rng(0)
    w = tg.Tensor(generator.standard_normal((3, 8)) * 0.5, requires_grad=True)
    u = tg.Tensor(generator.standard_normal((8, 8)) * 0.3, requires_grad=True)

    def step(xs):
        state = tg.zeros(xs.shape[1], 8, dtype=np.float64)
        for t in range(xs.shape[0]):
            state = (xs[t] @ w + state @ u).tanh()
        loss = (state * state).sum()
        loss.backward()
        return loss

    function = tg.compile(step) if compiled else step
    results = []
    for size in shapes:
        w.grad = u.grad = None
        xs = tg.Tensor(generator.standard_normal(size))
        results += [function(xs).data, w.grad.data.copy(), u.grad.data.copy()]
    return results, function


def assert_equal(eager, compiled):
    for a, b in zip(eager, compiled, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_indexing_and_matmul_checks_are_not_replayed():
    shapes = [(6, 4, 3)] * 5
    eager, _ = rnn_run(False, shapes)
    compiled, step = rnn_run(True, shapes)
    assert_equal(eager, compiled)
    source = step.program.source
    assert "GetItem.forward (inlined)" in source
    assert "MatMul.forward (inlined)" in source
    assert "normalize_index" not in source  # (x[t]: the index is worked out at capture)
    assert "ndim" not in source  # (matmul's checks)
    assert "ShapeError" not in source
    assert re.search(r"s\d+ = s0\[5\]", source)  # x[5], as numpy indexes it


def test_a_new_shape_makes_a_new_program_with_its_own_values():
    shapes = [(6, 4, 3), (6, 4, 3), (4, 2, 3), (4, 2, 3), (6, 4, 3), (4, 2, 3)]
    eager, _ = rnn_run(False, shapes)
    compiled, step = rnn_run(True, shapes)
    assert_equal(eager, compiled)
    sources = [program.source for _, program in step.programs]
    assert len(sources) == 2
    assert "s0[5]" in sources[0]
    assert "s0[5]" not in sources[1]  # (4 steps: x[0] to x[3])


def mlp_run(compiled, batches):
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(6, 12), tg.nn.ReLU(), tg.nn.Linear(12, 3))
    optimizer = optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    function = tg.compile(step) if compiled else step
    generator = np.random.default_rng(1)
    results = []
    for batch in batches:
        x = tg.Tensor(generator.standard_normal((batch, 6)).astype(np.float32))
        results.append(function(x, generator.integers(0, 3, batch)).data)
        results += [p.data.copy() for p in model.parameters()]
    return results, function


def test_a_new_batch_size_is_a_new_program_not_a_stale_shape():
    batches = [8, 8, 5, 5, 8, 5, 1]
    eager, _ = mlp_run(False, batches)
    compiled, step = mlp_run(True, batches)
    assert_equal(eager, compiled)
    sources = [program.source for _, program in step.programs]
    assert len(sources) == 3
    for source, batch in zip(sources, (8, 5, 1), strict=True):
        assert f"({batch}, 3)" in source  # (the loss's (rows, classes), constants)
    assert all("class_layout" not in source for source in sources)  # (CrossEntropy's)


def test_a_pure_helper_runs_when_the_replay_is_written_not_at_each_replay(monkeypatch):
    calls = []

    @shape.pure
    def counted(index, shape_=None):
        calls.append(index)
        return normalize(index, shape_)

    normalize = shape.normalize_index
    monkeypatch.setattr(shape, "normalize_index", counted)
    inline.body_of.cache_clear()  # (the rules read again, with their globals as patched)
    try:
        x = tg.Tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
        step = tg.compile(lambda x: x[1, 1:3].sum().backward())
        for _ in range(3):  # (the capture, two interpreted guard checks, the generated code)
            x.grad = None
            step(x)
        before = len(calls)
        for _ in range(5):
            x.grad = None
            step(x)
    finally:
        inline.body_of.cache_clear()
    assert before >= 2  # (the eager capture's call, and the one the folding made)
    assert len(calls) == before
    np.testing.assert_array_equal(x.grad.data, [[0, 0, 0, 0], [0, 1, 1, 0], [0, 0, 0, 0]])


def test_an_option_that_can_change_a_shape_is_not_hoisted():
    """A boolean mask held by a captured tensor: written in place between calls, it
    selects another count of elements, and the shapes after it are not constants."""
    mask = tg.Tensor(np.array([True, False, True, True]))
    w = tg.Tensor(np.arange(4.0) + 1, requires_grad=True)

    def step(x):
        y = (x * w)[mask]
        loss = (y * y).sum()
        loss.backward()
        return loss

    compiled = tg.compile(step)
    for call in range(6):
        if call == 3:
            mask.data[...] = [True, True, False, False]
        results = []
        for function in (step, compiled):
            w.grad = None
            results += [function(tg.Tensor(np.arange(4.0))).data, w.grad.data.copy()]
        assert_equal(results[:2], results[2:])
    assert "normalize_index" in compiled.program.source


def fold(source, bind=None, **facts):
    """`source` specialised to `facts` (name -> a value, or an array's (shape, dtype)),
    with assignments to `_` kept (they stand for what the replay reads after)."""
    known = {"len": Fact(None, len), "np": Fact(None, np)}  # (globals: their values)
    for helper in (as_matrix, reshaped, RowBuffers):
        known[helper.__name__] = Fact(None, helper)
    for name, fact in facts.items():
        if isinstance(fact, np.ndarray):
            known[name] = array_fact(fact.shape, fact.dtype, True)
        else:
            known[name] = Fact(ast.Constant(fact), fact)
    names = {}
    statements = Specialise(known, bind or (lambda value: names.setdefault(id(value), "v"))).block(
        ast.parse(source).body
    )
    (statements,) = drop_dead([statements], live={"_"})
    return "\n".join(ast.unparse(statement) for statement in statements)


@pytest.mark.parametrize(
    ("source", "facts", "expected"),
    [
        ("_ = x.shape[-1] + 1", {"x": np.zeros((3, 4))}, "_ = 5"),
        ("_ = x.ndim == 0 or w.ndim == 0", {"x": np.zeros(3), "w": np.zeros((3, 2))}, "_ = False"),
        ("_ = n or y", {"n": 0}, "_ = y"),
        ("_ = n or y", {"n": 2}, "_ = 2"),
        ("_ = y and n", {"n": 0}, "_ = y and 0"),
        ("_ = 1 < k < 3", {"k": 5}, "_ = False"),
        ("_ = 1 < k < 3", {"k": 2}, "_ = True"),
        ("_ = a if c else b", {"c": True}, "_ = a"),
        ("_ = x is None", {"x": np.zeros(2)}, "_ = False"),
        ("_ = x is y", {"x": np.zeros(2), "y": np.zeros(2)}, "_ = x is y"),
        ("if x.ndim == 1:\n    _ = 1\nelse:\n    _ = 2", {"x": np.zeros((2, 2))}, "_ = 2"),
        ("t = x.shape\n_ = t[0] * t[1]", {"x": np.zeros((2, 5))}, "_ = 10"),
        ("_ = x.sum()", {"x": np.zeros(2)}, "_ = x.sum()"),  # (an array's values: never)
        ("_ = len(x)", {"x": np.zeros((7, 2))}, "_ = 7"),
        ("_ = x.dtype == d", {"x": np.zeros(2, np.float32), "d": "float64"}, "_ = False"),
        ("_ = np.ndim(x) + np.shape(x)[0]", {"x": np.zeros((3, 1))}, "_ = 5"),
        # a @pure helper that hands back its array argument as it is: that argument
        ("_ = as_matrix(x) @ w", {"x": np.zeros((3, 4))}, "_ = x @ w"),
        ("_ = as_matrix(x) @ w", {"x": np.zeros((2, 3, 4))}, "_ = as_matrix(x) @ w"),
        ("_ = reshaped(x, (3, 4))", {"x": np.zeros((3, 4))}, "_ = x"),
        ("_ = reshaped(x, (4, 3))", {"x": np.zeros((3, 4))}, "_ = reshaped(x, (4, 3))"),
        ("_ = reshaped(x, (3, 4))", {}, "_ = reshaped(x, (3, 4))"),  # (no shape known)
        # a Python number beside a float array: a 0-d array of its dtype (numpy's own cast)
        ("_ = x * 2.5", {"x": np.zeros(3, np.float32)}, "_ = x * v"),
        ("_ = 1 - x / 3", {"x": np.zeros(3, np.float16)}, "_ = v - x / v"),
        ("_ = x * 2.5", {"x": np.zeros(3, np.int64)}, "_ = x * 2.5"),
        ("_ = x * 100000.0", {"x": np.zeros(3, np.float16)}, "_ = x * 100000.0"),  # (inf)
        ("_ = x * 2 ** 60", {"x": np.zeros(3)}, "_ = x * 1152921504606846976"),
        ("_ = x ** 2 + y", {"x": np.zeros(3)}, "_ = x ** 2 + y"),
        # the shapes and dtypes of what numpy computes from arrays whose own are fixed
        (
            "y = x.reshape(-1)\n_ = y.size + y.ndim",
            {"x": np.zeros((3, 4))},
            "y = x.reshape(-1)\n_ = 13",
        ),
        ("_ = x.T.shape", {"x": np.zeros((3, 4))}, "_ = (4, 3)"),
        ("_ = np.tanh(x).ndim", {"x": np.zeros((3, 4))}, "_ = 2"),
        ("_ = (x @ w).shape", {"x": np.zeros((3, 4)), "w": np.zeros((4, 5))}, "_ = (3, 5)"),
        ("_ = (x * w).shape", {"x": np.zeros((3, 1)), "w": np.zeros(4)}, "_ = (3, 4)"),
        ("y = x * 2.0\ny += 1\n_ = y.shape", {"x": np.zeros(3)}, "y = x * v\ny += 1\n_ = (3,)"),
        (
            "_ = (x * w).shape",
            {"x": np.zeros(3), "w": np.zeros(3, np.float32)},
            "_ = (x * w).shape",
        ),
        # a context its class declares inert for these arguments: the body alone
        ("with RowBuffers(n):\n    _ = x + 1", {"n": 10}, "_ = x + 1"),
        (
            "with RowBuffers(n):\n    _ = x + 1",
            {"n": 1024},
            "with RowBuffers(1024):\n    _ = x + 1",
        ),
        ("with RowBuffers(n):\n    _ = x + 1", {}, "with RowBuffers(n):\n    _ = x + 1"),
        (
            "with RowBuffers(8, over='ignore'):\n    _ = 1",
            {},
            "with RowBuffers(8, over='ignore'):\n    _ = 1",
        ),
    ],
)
def test_the_folding_computes_what_python_would(source, facts, expected):
    assert fold(source, **facts) == expected


def test_a_name_assigned_in_a_branch_the_capture_cannot_decide_is_not_known():
    source = "n = 1\nif flag:\n    n = 2\n_ = n + 1"
    assert fold(source).endswith("_ = n + 1")
    assert fold(source, flag=False) == "_ = 2"
    loop = "n = 1\nfor item in items:\n    n = n + item\n_ = n"
    assert fold(loop).endswith("_ = n")


def test_a_call_of_an_impure_function_or_on_a_mutable_value_stays():
    values = []
    bound = {}

    def bind(value):
        return bound.setdefault(id(value), f"v{len(bound)}")

    source = "_ = f(3)\n_ = len(items)\n_ = g(k)"

    def g(k):
        values.append(k)
        return k + 1

    g.pure = True
    facts = {"f": Fact(None, lambda k: k), "items": Fact(None, [1, 2]), "g": Fact(None, g)}
    statements = Specialise({**facts, "k": Fact(ast.Constant(4), 4)}, bind).block(
        ast.parse(source).body
    )
    assert [ast.unparse(s) for s in statements] == ["_ = f(3)", "_ = len(items)", "_ = 5"]
    assert values == [4]


def _rescale(op, factor):
    """A helper given the node: it sets an attribute the forward set before."""
    op.scale = op.scale * factor


class _Scaled(Op):
    """out = a * scale (scale set, then changed by a helper given the node); da = g * scale"""

    __slots__ = ("scale", "dims")

    def forward(self, a, factor=3.0):
        self.scale = 2.0
        self.dims = a.ndim
        _rescale(self, factor)
        return a * (self.scale + self.dims)

    def backward(self, grad_output):
        return (grad_output * (self.scale + self.dims),)


def test_an_attribute_a_helper_changes_through_the_node_is_read_from_the_node():
    x = tg.Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)

    def step(x):
        _Scaled.apply(x).sum().backward()

    compiled = tg.compile(step)
    for _ in range(4):
        grads = []
        for function in (step, compiled):
            x.grad = None
            function(x)
            grads.append(x.grad.data.copy())
        np.testing.assert_array_equal(grads[0], np.full((2, 3), 8.0))
        np.testing.assert_array_equal(grads[1], grads[0])
    assert "_Scaled.forward (inlined)" in compiled.program.source


def test_checks_of_shapes_and_dtypes_are_made_at_capture_not_at_each_replay():
    tg.manual_seed(0)
    norm = tg.nn.LayerNorm(4)
    target = tg.Tensor(np.arange(12.0).reshape(3, 4).astype(np.float32))

    def step(x):
        loss = (norm(x) * target).sum()
        loss.backward()
        return loss

    compiled = tg.compile(step)
    for call in range(4):
        results = []
        for function in (step, compiled):
            norm.weight.grad = norm.bias.grad = None
            x = tg.Tensor(np.random.default_rng(call).standard_normal((3, 4)).astype(np.float32))
            results += [function(x).data, norm.weight.grad.data.copy(), norm.bias.grad.data]
        assert_equal(results[:3], results[3:])
    source = compiled.program.source
    assert "LayerNorm.forward (inlined)" in source
    for check in ("check_float", "check_affine", "check_normalized_shape"):
        assert check not in source


def test_a_node_other_nodes_hold_keeps_its_attributes_on_itself():
    """rows(a): each Row's backward hands its gradient to the Unbind node it holds (an
    option), whose backward stacks them: the hub's attributes stay on the node."""
    a = tg.Tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)

    def step(a):
        first, _, third, fourth = unbind.rows(a)
        (first * 1.0 + third * 3.0 + fourth * fourth).sum().backward()

    compiled = tg.compile(step)
    for _ in range(4):
        grads = []
        for function in (step, compiled):
            a.grad = None
            function(a)
            grads.append(a.grad.data.copy())
        np.testing.assert_array_equal(grads[1], grads[0])
        np.testing.assert_array_equal(grads[0][1], [0.0, 0.0, 0.0])
    assert "Unbind.forward (inlined)" in compiled.program.source
