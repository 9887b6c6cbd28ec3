"""One SGD training step of a 2-layer ReLU MLP with cross-entropy, timed four ways.

    hand-written numpy  forward and backward derived on paper: the floor for an engine on numpy
    PyTorch CPU         the same step with torch.autograd (2 threads)
    tinygrad_ops        the same step with this engine (F.linear, relu, F.cross_entropy, SGD)
    compiled            the same step under tg.compile: captured once, replayed

Rounds are interleaved (numpy, torch, ours, numpy, ...) so that machine noise hits all three
alike; each figure is the median over rounds of the mean step time within a round.
Also a per-op overhead figure: forward+backward of a 100-op chain of 4x4 tensors (eager,
compiled, hand-written numpy, PyTorch, and the leanest possible tape).

Run:  .venv/bin/python benchmarks/train_step.py  [--rounds 15] [--quick]
"""

import argparse
import os
import time

# Torch's OpenMP workers spin after each op by default, stealing the cores from whatever
# runs next (numpy and this engine, interleaved here): make them sleep instead.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import torch
from _common import chain_loss, compiled_chain

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional name)
from tinygrad_ops import optim

SIZES = [(64, 64, 128, 10), (256, 784, 256, 10), (8, 8, 8, 4)]
LEARNING_RATE = 0.01


def make_problem(batch, features, hidden, classes, seed=0):
    generator = np.random.default_rng(seed)
    x = generator.standard_normal((batch, features)).astype(np.float32)
    y = generator.integers(0, classes, size=batch)
    bound1 = 1 / np.sqrt(features)
    bound2 = 1 / np.sqrt(hidden)
    params = [
        generator.uniform(-bound1, bound1, (hidden, features)).astype(np.float32),
        generator.uniform(-bound1, bound1, (hidden,)).astype(np.float32),
        generator.uniform(-bound2, bound2, (classes, hidden)).astype(np.float32),
        generator.uniform(-bound2, bound2, (classes,)).astype(np.float32),
    ]
    return x, y, params


class NumpyStep:
    """Forward and backward written out by hand (the gradients derived on paper)."""

    def __init__(self, x, y, params):
        self.x, self.y = x, y
        self.w1, self.b1, self.w2, self.b2 = (p.copy() for p in params)
        self.rows = np.arange(len(y))

    def __call__(self):
        x, y, rows = self.x, self.y, self.rows
        hidden = x @ self.w1.T + self.b1
        active = np.maximum(hidden, 0)
        logits = active @ self.w2.T + self.b2
        shifted = logits - logits.max(axis=1, keepdims=True)
        exp = np.exp(shifted)
        total = exp.sum(axis=1, keepdims=True)
        loss = float(np.mean(np.log(total[:, 0]) - shifted[rows, y]))
        # d loss / d logits = (softmax - onehot) / N
        grad_logits = exp / total
        grad_logits[rows, y] -= 1
        grad_logits /= len(y)
        grad_w2 = grad_logits.T @ active
        grad_b2 = grad_logits.sum(axis=0)
        grad_hidden = grad_logits @ self.w2
        grad_hidden *= hidden > 0
        grad_w1 = grad_hidden.T @ x
        grad_b1 = grad_hidden.sum(axis=0)
        for param, grad in (
            (self.w1, grad_w1),
            (self.b1, grad_b1),
            (self.w2, grad_w2),
            (self.b2, grad_b2),
        ):
            param -= LEARNING_RATE * grad
        return loss


class TorchStep:
    def __init__(self, x, y, params):
        self.x = torch.from_numpy(x)
        self.y = torch.from_numpy(y)
        self.params = [torch.tensor(p, requires_grad=True) for p in params]
        self.optimizer = torch.optim.SGD(self.params, lr=LEARNING_RATE)

    def __call__(self):
        w1, b1, w2, b2 = self.params
        self.optimizer.zero_grad()
        hidden = torch.nn.functional.linear(self.x, w1, b1).relu()
        logits = torch.nn.functional.linear(hidden, w2, b2)
        loss = torch.nn.functional.cross_entropy(logits, self.y)
        loss.backward()
        self.optimizer.step()
        return loss.item()


class OursStep:
    def __init__(self, x, y, params):
        self.x = tg.Tensor(x)
        self.y = y
        self.params = [tg.Tensor(p.copy(), requires_grad=True) for p in params]
        self.optimizer = optim.SGD(self.params, lr=LEARNING_RATE)

    def __call__(self):
        return self.step(self.x, self.y).item()

    def step(self, x, y):
        w1, b1, w2, b2 = self.params
        self.optimizer.zero_grad()
        hidden = F.linear(x, w1, b1).relu()
        logits = F.linear(hidden, w2, b2)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        self.optimizer.step()
        return loss


class CompiledStep(OursStep):
    """OursStep's step under tg.compile: the first call captures, the others replay."""

    def __init__(self, x, y, params):
        super().__init__(x, y, params)
        self.step = tg.compile(self.step)


def time_interleaved(steps, rounds, repeats):
    """Median over `rounds` of the mean time of `repeats` calls, per step function.

    The order rotates every round, so that no engine always runs right after another.
    """
    timings = {name: [] for name in steps}
    for step in steps.values():  # warm up (a compiled step: captured, then compiled)
        for _ in range(5):
            step()
    names = list(steps)
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            step = steps[name]
            start = time.perf_counter()
            for _ in range(repeats):
                step()
            timings[name].append((time.perf_counter() - start) / repeats)
    return {name: float(np.median(values)) for name, values in timings.items()}


class BareTensor:
    """The leanest tape a Python engine on numpy can have, for the chain figure's floor.

    No version counters, no shape, dtype or broadcasting checks, no hooks, no in-place
    accumulation, no higher-order gradients: each op stores its inputs and a closure that
    maps the output's gradient to the inputs' gradients, and backward walks the chain
    once. Whatever this engine costs above it is the price of those checks and features.
    """

    __slots__ = ("data", "grad", "parents", "rule")

    def __init__(self, data, parents=(), rule=None):
        self.data, self.grad, self.parents, self.rule = data, None, parents, rule

    def __mul__(self, other):
        if isinstance(other, BareTensor):
            a, b = self.data, other.data
            return BareTensor(a * b, (self, other), lambda g: (g * b, g * a))
        return BareTensor(self.data * other, (self,), lambda g: (g * other,))

    def __add__(self, constant):
        return BareTensor(self.data + constant, (self,), lambda g: (g,))

    def tanh(self):
        out = np.tanh(self.data)
        return BareTensor(out, (self,), lambda g: (g * (1 - out * out),))

    def sum(self):
        shape = self.data.shape
        return BareTensor(self.data.sum(), (self,), lambda g: (np.broadcast_to(g, shape),))

    def backward(self):
        order, seen, stack = [], set(), [self]
        while stack:  # a chain: the search meets the nodes in reverse creation order
            tensor = stack.pop()
            order.append(tensor)
            for parent in tensor.parents:
                if parent.rule is not None and id(parent) not in seen:
                    seen.add(id(parent))
                    stack.append(parent)
        grads = {id(self): np.ones(())}
        for tensor in order:
            grad = grads.pop(id(tensor), None)
            if grad is None:
                continue
            for parent, parent_grad in zip(tensor.parents, tensor.rule(grad)):
                if parent.rule is None:
                    parent.grad = parent_grad if parent.grad is None else parent.grad + parent_grad
                else:
                    previous = grads.get(id(parent))
                    grads[id(parent)] = parent_grad if previous is None else previous + parent_grad


def chain_overhead(rounds):
    """Forward+backward of a chain of 100 elementwise ops on 4x4 float32, per op."""

    def ours():
        x = tg.Tensor(np.full((4, 4), 0.5, dtype=np.float32), requires_grad=True)
        chain_loss(x).backward()

    def theirs():
        x = torch.full((4, 4), 0.5, requires_grad=True)
        chain_loss(x).backward()

    def bare():
        x = BareTensor(np.full((4, 4), 0.5, dtype=np.float32))
        chain_loss(x).backward()

    steps = {"tinygrad_ops": ours, "compiled": compiled_chain(), "numpy": numpy_chain}
    steps.update({"torch": theirs, "bare": bare})
    timings = time_interleaved(steps, rounds, 20)
    return {name: seconds / 100 for name, seconds in timings.items()}


def numpy_chain():
    """The chain's forward and backward written out by hand (the gradient of x)."""
    x = np.full((4, 4), 0.5, dtype=np.float32)
    saved = []
    y = x
    for _ in range(25):
        t = np.tanh(y * 1.01)
        b = t + 0.5
        saved.append((t, b))
        y = b * x
    grad = np.ones_like(y)
    grad_x = np.zeros_like(x)
    for t, b in reversed(saved):  # y = b x, b = tanh(1.01 y_prev) + 0.5
        grad_x += grad * b
        grad = (grad * x) * (1 - t * t) * 1.01
    return grad_x + grad


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (median)")
    parser.add_argument("--quick", action="store_true", help="fewer rounds, for a smoke run")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else args.rounds
    torch.set_num_threads(2)
    print(f"numpy {np.__version__}, torch {torch.__version__} (2 threads), float32")
    print(f"{'batch,in,hidden,classes':>24} {'numpy':>10} {'torch':>10} {'ours':>10}"
          f" {'compiled':>10} {'ours/numpy':>11} {'compiled/numpy':>15}"
          f" {'torch/ours':>11}")  # fmt: skip
    for size in SIZES:
        x, y, params = make_problem(*size)
        steps = {
            "numpy": NumpyStep(x, y, params),
            "torch": TorchStep(x, y, params),
            "ours": OursStep(x, y, params),
            "compiled": CompiledStep(x, y, params),
        }
        losses = {name: step() for name, step in steps.items()}
        spread = max(losses.values()) - min(losses.values())
        assert spread < 1e-4, f"the three steps disagree on the loss: {losses}"
        repeats = 5 if size[0] >= 256 else 50
        timings = time_interleaved(steps, rounds, repeats)
        label = ",".join(str(value) for value in size)
        print(
            f"{label:>24} {timings['numpy'] * 1e6:>8.1f}us {timings['torch'] * 1e6:>8.1f}us "
            f"{timings['ours'] * 1e6:>8.1f}us {timings['compiled'] * 1e6:>8.1f}us "
            f"{timings['ours'] / timings['numpy']:>10.2f}x "
            f"{timings['compiled'] / timings['numpy']:>14.2f}x "
            f"{timings['torch'] / timings['ours']:>10.2f}x"
        )
    torch.set_num_threads(1)
    chain = chain_overhead(rounds)
    print(
        f"100-op chain (4x4, fwd+bwd, torch 1 thread): ours {chain['tinygrad_ops'] * 1e6:.2f} "
        f"us/op, torch {chain['torch'] * 1e6:.2f} us/op, "
        f"ours/torch {chain['tinygrad_ops'] / chain['torch']:.2f}"
    )
    print(
        f"  leanest possible tape (no checks, BareTensor): {chain['bare'] * 1e6:.2f} us/op, "
        f"bare/torch {chain['bare'] / chain['torch']:.2f}"
    )
    print(
        f"  compiled: {chain['compiled'] * 1e6:.2f} us/op; hand numpy: "
        f"{chain['numpy'] * 1e6:.2f} us/op; "
        f"compiled/numpy {chain['compiled'] / chain['numpy']:.2f}, "
        f"compiled/torch {chain['compiled'] / chain['torch']:.2f}"
    )


if __name__ == "__main__":
    main()
