"""Benchmark of the core engine's overhead (not a test: run it, read the table).

1. A chain of 100 small elementwise ops on a 4x4 float32 tensor, forward + backward, in
   this engine (eager, and compiled with tg.compile) and in PyTorch (CPU, one thread):
   median time per round, microseconds per op, and the ratio ours / PyTorch. At this size
   numpy's work is negligible: the numbers measure the per-op overhead of recording the
   tape and walking it back (compiled: of replaying the recorded kernels).
2. The backward pass of a 100,000-node chain (building it is not timed).

    .venv/bin/python benchmarks/bench_core.py [--rounds 7] [--repeats 20]
"""

import argparse
import statistics
import sys
import time

import numpy as np
import torch

import tinygrad_ops as tg

CHAIN_LENGTH = 100
LONG_CHAIN = 100_000


def small_chain(x, w):
    """100 elementwise ops cycling through mul, add, tanh, mul by a tensor, sigmoid, sub.

    Works unchanged on our Tensors and on torch tensors (methods and operators only).
    """
    y = x
    for step in range(CHAIN_LENGTH // 5):
        if step % 2:
            y = (y * 0.9 + 0.1).tanh() * w
            y = y.sigmoid()
        else:
            y = (y * w - 0.2).tanh() * 1.1
            y = y + 0.05
    return y.sum()  # one more op: the scalar loss


def time_rounds(step, rounds, repeats):
    """Median over `rounds` of the mean time of `repeats` calls of `step` (seconds)."""
    step()  # warm-up
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeats):
            step()
        times.append((time.perf_counter() - start) / repeats)
    return statistics.median(times), min(times)


def eager_step(x, w):
    """Forward and backward of `small_chain` on our tensors or torch's, gradients cleared."""

    def step():
        x.grad = None
        w.grad = None
        small_chain(x, w).backward()

    return step


def bench_small_chain(rounds, repeats):
    generator = np.random.default_rng(0)
    x_values = generator.standard_normal((4, 4)).astype(np.float32)
    w_values = generator.standard_normal((4, 4)).astype(np.float32)

    x = tg.Tensor(x_values, requires_grad=True)
    w = tg.Tensor(w_values, requires_grad=True)
    ours = eager_step(x, w)
    xt = torch.tensor(x_values, requires_grad=True)
    wt = torch.tensor(w_values, requires_grad=True)
    theirs = eager_step(xt, wt)

    chain_step = tg.compile(lambda x, w: small_chain(x, w).backward())

    def compiled():
        x.grad = None  # outside: inside the compiled function it would run only once
        w.grad = None
        chain_step(x, w)

    ours()
    theirs()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    compiled()
    compiled()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    timings = {
        "tinygrad_ops": time_rounds(ours, rounds, repeats),
        "compiled": time_rounds(compiled, rounds, repeats),
        "pytorch": time_rounds(theirs, rounds, repeats),
    }
    return timings


def bench_long_chain(rounds):
    times = []
    for _ in range(rounds):
        x = tg.Tensor(np.array([1.0]), requires_grad=True)
        y = x
        for _ in range(LONG_CHAIN):
            y = y * 1.000001
        loss = y.sum()
        start = time.perf_counter()
        loss.backward()
        times.append(time.perf_counter() - start)
        assert abs(x.grad.item() - 1.000001**LONG_CHAIN) < 1e-6
    return statistics.median(times), min(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds (the median is reported)")
    parser.add_argument("--repeats", type=int, default=20, help="forward+backward per round")
    parser.add_argument("--long-rounds", type=int, default=3, help="rounds of the long chain")
    args = parser.parse_args(argv)

    torch.set_num_threads(1)  # one thread: the fair comparison for a 4x4 problem
    ops = CHAIN_LENGTH + 1
    timings = bench_small_chain(args.rounds, args.repeats)
    long_median, long_best = bench_long_chain(args.long_rounds)

    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, torch {torch.__version__}")
    print(f"torch.set_num_threads(1); median of {args.rounds} rounds x {args.repeats} runs")
    print()
    print(f"forward+backward, chain of {ops} ops on a 4x4 float32 tensor")
    print(f"{'engine':<14}{'median ms':>11}{'best ms':>10}{'us/op':>9}")
    for name, (median, best) in timings.items():
        print(f"{name:<14}{median * 1e3:>11.3f}{best * 1e3:>10.3f}{median / ops * 1e6:>9.2f}")
    for name in ("tinygrad_ops", "compiled"):
        ratio = timings[name][0] / timings["pytorch"][0]
        print(f"ratio {name} / pytorch (median): {ratio:.2f}")
    print()
    print(f"backward of a {LONG_CHAIN:,}-node chain (median of {args.long_rounds}):")
    print(
        f"  {long_median:.3f} s (best {long_best:.3f} s), "
        f"{long_median / LONG_CHAIN * 1e6:.2f} us per node"
    )


if __name__ == "__main__":
    main()
