"""The replay's inlined rules (jit/inline.py, fused.py): an op's own forward and backward
written into the generated function. One statement of each rule: rewriting a rule changes
what the replay runs, and every inlined op replays bit for bit as its methods do."""

import numpy as np
import pytest

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops.jit import fused
from tinygrad_ops.ops.unary import Tanh


def rnn_step(weights):
    w, u = weights

    def step(xs):
        state = tg.zeros(4, 8, dtype=np.float64)
        for t in range(xs.shape[0]):
            state = (xs[t] @ w + state @ u).tanh()
        loss = (state * state).sum()
        loss.backward()
        return loss

    return step


def run(compiled, calls=5):
    generator = np.random.default_rng(0)
    w = tg.Tensor(generator.standard_normal((3, 8)) * 0.5, requires_grad=True)
    u = tg.Tensor(generator.standard_normal((8, 8)) * 0.3, requires_grad=True)
    step = rnn_step((w, u))
    step = tg.compile(step) if compiled else step
    out = []
    for _ in range(calls):
        w.grad = u.grad = None
        xs = tg.Tensor(generator.standard_normal((6, 4, 3)))
        out += [step(xs).data, w.grad.data.copy(), u.grad.data.copy()]
    return out, step


def tanh_backward_rewritten(self, grad_output):
    """d tanh = 1 - tanh², written another way: g - g tanh² (equal, not the same bits)."""
    (out,) = self.saved_tensors
    return (grad_output - grad_output * out * out,)


def test_an_equal_rewrite_of_one_rule_is_what_the_replay_runs(monkeypatch):
    before, _ = run(False)
    monkeypatch.setattr(Tanh, "backward", tanh_backward_rewritten)  # one file changes
    eager, _ = run(False)
    compiled, step = run(True)
    assert any(not np.array_equal(a, b) for a, b in zip(before, eager))  # (another rule)
    for a, b in zip(eager, compiled):
        np.testing.assert_array_equal(a, b)
    assert "Tanh.backward (inlined)" in step.program.source
    assert "grad_output - " in step.program.source  # the rewritten body itself


def x(shape=(3, 4), seed=0, low=None):
    values = np.random.default_rng(seed).standard_normal(shape)
    if low is not None:
        values = np.abs(values) + low
    return values


# name -> (function of the tensors, their arrays): each a loss, so that backward runs.
CASES = {
    "add sub mul div neg": (
        lambda a, b: ((a + b) * (a - b) / (b * b + 1) - -a).sum(),
        (x(), x(seed=1)),
    ),
    "broadcast": (lambda a, b: (a * b + b).sum(), (x(), x((4,), 2))),
    "pow exp log sqrt": (lambda a: (a**3 + a.exp() + a.log() + a.sqrt()).sum(), (x(low=0.5),)),
    "tanh sigmoid relu": (lambda a: (a.tanh() * a.sigmoid() + a.relu()).sum(), (x(),)),
    "leaky gelu erf": (lambda a: (F.leaky_relu(a, 0.1) + F.gelu(a) + a.erf()).sum(), (x(),)),
    "maximum minimum clip": (
        lambda a, b: (tg.maximum(a, b) + tg.minimum(a, b) + a.clamp(-0.5, 0.5)).sum(),
        (x(), x(seed=1)),
    ),
    "atan2 logaddexp": (
        lambda a, b: (tg.atan2(a, b) + tg.logaddexp(a, b)).sum(),
        (x(), x(seed=1)),
    ),
    "sum mean var": (lambda a: a.sum(1).sum() + a.mean() + a.var(0).sum(), (x(),)),
    "reshape broadcast_to getitem": (
        lambda a: a.reshape(4, 3)[1:, ::2].sum() + a[None].expand(2, 3, 4).sum(),
        (x(),),
    ),
    "linear": (lambda a, w, b: F.linear(a, w, b).tanh().sum(), (x(), x((5, 4), 1), x((5,), 2))),
    "matmul": (lambda a, w: (a @ w).sum(), (x(), x((4, 2), 1))),
    "softmax log_softmax": (lambda a: (F.softmax(a, 1) * F.log_softmax(a, 0)).sum(), (x(),)),
    "layer_norm rms_norm": (
        lambda a, w: (F.layer_norm(a, (4,), w, w) + F.rms_norm(a, (4,), w)).sum(),
        (x(), x((4,), 1)),
    ),
    "cross_entropy": (lambda a: F.cross_entropy(a, tg.Tensor(np.array([0, 3, 1]))), (x(),)),
    "cast": (lambda a: (a.astype(np.float32) * 2).sum(), (x(),)),
    "gather scatter": (
        lambda a: (
            a.gather(1, tg.Tensor(np.array([[0, 1], [2, 3], [1, 1]]))).sum()
            + tg.zeros(3, 4, dtype=np.float64)
            .scatter_add(1, tg.Tensor(np.array([[0, 1, 1, 2]] * 3)), a)
            .sum()
        ),
        (x(),),
    ),
    "conv pool": (
        lambda a, k: F.max_pool2d(F.conv2d(a, k), 2).sum() + F.avg_pool2d(a, 2).sum(),
        (x((1, 2, 6, 6)), x((3, 2, 3, 3), 1)),
    ),
    "round floor trunc sign": (
        lambda a: ((a * 3).round() + a.floor() + a.trunc() + a.sign() + a).sum(),
        (x(),),
    ),
    "remainder fmod": (
        lambda a, b: (a % 0.7 + tg.fmod(a, b.abs() + 1) + a).sum(),
        (x(), x(seed=1)),
    ),
}


def replay(function, arrays, fusing, monkeypatch):
    """Eager results and the compiled ones (four calls; the generated code from the
    third), with the inlined rules (`fusing`) or calling every op's methods."""
    monkeypatch.setattr(fused, "FUSING", fusing)
    compiled = tg.compile(lambda *tensors: function(*tensors).backward())
    results = []
    for call in range(4):
        for run_it in (lambda *t: function(*t).backward(), compiled):
            tensors = [tg.Tensor(array + call, requires_grad=True) for array in arrays]
            run_it(*tensors)
            results.append([tensor.grad.data for tensor in tensors])
    return results, compiled


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", list(CASES))
def test_every_inlined_op_replays_bit_for_bit_with_and_without_inlining(name, monkeypatch):
    function, arrays = CASES[name]
    listings = []
    for fusing in (True, False):
        results, compiled = replay(function, arrays, fusing, monkeypatch)
        for eager, replayed in zip(results[::2], results[1::2]):
            for a, b in zip(eager, replayed):
                np.testing.assert_array_equal(a, b)
        listings.append(compiled.program.source)
    assert "(inlined)" in listings[0]
    assert "(inlined)" not in listings[1]


def inlined_ops(monkeypatch):
    names = set()
    for function, arrays in CASES.values():
        _, compiled = replay(function, arrays, True, monkeypatch)
        for line in compiled.program.source.splitlines():
            if line.strip().endswith("(inlined)"):
                names.add(line.strip()[2:].split(".")[0])
    return names


def test_the_cases_cover_the_ops_a_training_step_inlines(monkeypatch):
    covered = inlined_ops(monkeypatch)
    common = {"Add", "Sub", "Mul", "Div", "Tanh", "Relu", "Sigmoid", "Exp", "Log", "Sum"}
    common |= {"Linear", "GetItem", "Reshape", "Softmax", "LogSoftmax", "LayerNorm"}
    common |= {"CrossEntropy", "Maximum", "Sqrt", "Cast", "Gather"}
    assert common <= covered, common - covered
