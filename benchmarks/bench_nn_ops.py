"""Forward + backward of the fused nn ops against PyTorch CPU, in the same run.

    .venv/bin/python benchmarks/bench_nn_ops.py [--rounds 30] [--threads 1 2] [--size 256 1024]

Each case runs `out = op(x); out.backward(upstream)` with x, the affine parameters and the
upstream gradient in float32, and reports the median over the rounds (after warm-up) for
both engines, and their ratio (ours / PyTorch; below 1 means we are faster). The table is
printed once per PyTorch intra-op thread count in `--threads` (1 and 2 by default: the
machines this project targets have 2 cores). numpy's elementwise loops are
single-threaded; its BLAS calls (the row and column sums here are matrix-vector products)
use the OpenBLAS thread pool. On a machine shared with other jobs the 2-thread PyTorch
figures swing widely (its worker threads wait on busy cores); the 1-thread ones are the
steadier comparison. cross_entropy (1024 classes) is listed too, as a step of every
training loop. (linear is left out: both engines spend its time in the same BLAS matrix
products, and two BLAS thread pools fighting over two cores measure only the fight.)
"""

import argparse
import statistics
import time

import numpy as np
import torch

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)


def median_seconds(step, rounds, warmup=5):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cases(rows, columns):
    generator = np.random.default_rng(0)
    x = generator.standard_normal((rows, columns)).astype(np.float32)
    upstream = generator.standard_normal((rows, columns)).astype(np.float32)
    weight = generator.uniform(0.5, 1.5, columns).astype(np.float32)
    bias = generator.standard_normal(columns).astype(np.float32)

    ours_weight = tg.Tensor(weight, requires_grad=True)
    ours_bias = tg.Tensor(bias, requires_grad=True)
    ours_stats = (tg.zeros(columns), tg.ones(columns))
    theirs_weight = torch.tensor(weight, requires_grad=True)
    theirs_bias = torch.tensor(bias, requires_grad=True)
    theirs_stats = (torch.zeros(columns), torch.ones(columns))
    theirs_upstream = torch.tensor(upstream)
    target = generator.integers(0, columns, rows)
    theirs_target = torch.tensor(target)

    ours_ops = {
        "softmax": lambda t: F.softmax(t, axis=-1),
        "log_softmax": lambda t: F.log_softmax(t, axis=-1),
        "layer_norm": lambda t: F.layer_norm(t, (columns,), ours_weight, ours_bias),
        "batch_norm": lambda t: F.batch_norm(t, *ours_stats, ours_weight, ours_bias, True),
        "rms_norm": lambda t: F.rms_norm(t, (columns,), ours_weight),
        "cross_entropy": lambda t: F.cross_entropy(t, target),
    }
    theirs_ops = {
        "softmax": lambda t: torch.softmax(t, -1),
        "log_softmax": lambda t: torch.log_softmax(t, -1),
        "layer_norm": lambda t: torch.nn.functional.layer_norm(
            t, (columns,), theirs_weight, theirs_bias
        ),
        "batch_norm": lambda t: torch.nn.functional.batch_norm(
            t, *theirs_stats, theirs_weight, theirs_bias, True
        ),
        "rms_norm": lambda t: torch.nn.functional.rms_norm(t, (columns,), theirs_weight),
        "cross_entropy": lambda t: torch.nn.functional.cross_entropy(t, theirs_target),
    }
    for name in ours_ops:

        def ours_step(op=ours_ops[name]):
            tensor = tg.Tensor(x, requires_grad=True)
            out = op(tensor)
            out.backward(upstream if out.ndim else None)
            ours_weight.grad = ours_bias.grad = None

        def theirs_step(op=theirs_ops[name]):
            tensor = torch.tensor(x, requires_grad=True)
            out = op(tensor)
            out.backward(theirs_upstream if out.ndim else None)
            theirs_weight.grad = theirs_bias.grad = None

        yield name, ours_step, theirs_step


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument(
        "--threads", type=int, nargs="+", default=[1, 2], help="PyTorch intra-op thread counts"
    )
    parser.add_argument("--size", type=int, nargs=2, default=(256, 1024))
    args = parser.parse_args(argv)
    rows, columns = args.size
    for threads in args.threads:
        torch.set_num_threads(threads)
        print(
            f"\nforward+backward, ({rows}, {columns}) float32, median of {args.rounds} rounds, "
            f"torch {torch.__version__} with {threads} thread(s), numpy {np.__version__}"
        )
        print(f"{'op':<14} {'ours (us)':>10} {'torch (us)':>11} {'ratio':>7}")
        for name, ours_step, theirs_step in cases(rows, columns):
            # Interleave the two engines' rounds, so that a noisy neighbour hurts both alike.
            ours_times, theirs_times = [], []
            for _ in range(3):
                ours_times.append(median_seconds(ours_step, args.rounds // 3 + 1))
                theirs_times.append(median_seconds(theirs_step, args.rounds // 3 + 1))
            ours = statistics.median(ours_times)
            theirs = statistics.median(theirs_times)
            print(f"{name:<14} {ours * 1e6:>10.0f} {theirs * 1e6:>11.0f} {ours / theirs:>7.2f}")


if __name__ == "__main__":
    main()
