"""Forward + backward of the fused nn ops against PyTorch CPU, in the same run.

    .venv/bin/python benchmarks/bench_nn_ops.py [--rounds 60] [--threads 1 2] [--size 256 1024]

Each case runs `out = op(x); out.backward(upstream)` with x, the affine parameters and the
upstream gradient in float32, producing every gradient (x, weight, bias), and reports the
median over the rounds for both engines, and their ratio (ours / PyTorch; below 1 means we
are faster). Both engines wrap the same numpy array as a fresh leaf each round without
copying it (`tg.Tensor(x)`, `torch.from_numpy(x)`), so neither pays for a copy the other
skips. The rounds are interleaved in blocks (each block warms up first, and the order of
the two engines alternates between blocks), so that a noisy neighbour hurts both alike.

The table is printed once per PyTorch intra-op thread count in `--threads` (1 and 2 by
default: the machines this project targets have 2 cores; 2 is PyTorch's default there).
numpy's elementwise loops are single-threaded; its BLAS calls (the row and column sums here
are matrix-vector products) use the OpenBLAS thread pool. On a machine shared with other
jobs the 2-thread PyTorch figures swing widely (its worker threads spin on busy cores);
the 1-thread ones are the steadier comparison. A row where PyTorch with more threads took
over three times as long as with fewer is marked "torch stalled": its workers waited for
a core held by another job, so that row measures the machine, not the op.
cross_entropy (1024 classes) is listed too, as a step of every training loop. (linear is
left out: both engines spend its time in the same BLAS matrix products, and two BLAS
thread pools fighting over two cores measure only the fight.)

The last column counts the page faults of one of our rounds. It should be 0: when it is
not, glibc is handing the freed arrays back to the operating system after every round and
taking fresh zeroed pages for the next (about 2 us per 4 KiB page, several times the
arithmetic). That depends on where other live objects sit on the heap, not on the op; see
benchmarks/README.md for the malloc settings that stop it.
"""

import argparse
import statistics
import time

try:
    import resource
except ImportError:  # not on Windows: the page-fault column is left blank there
    resource = None

import numpy as np
import torch

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)
from tinygrad_ops.bench import keep_freed_memory


def timed_rounds(step, rounds, warmup=5):
    """Seconds of each of `rounds` calls of `step`, after `warmup` untimed calls."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return times


def page_faults_per_round(step, rounds=10):
    if resource is None:
        return None
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(rounds):
        step()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / rounds


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
            tensor = torch.from_numpy(x).requires_grad_()
            out = op(tensor)
            out.backward(theirs_upstream if out.ndim else None)
            theirs_weight.grad = theirs_bias.grad = None

        yield name, ours_step, theirs_step


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--blocks", type=int, default=6, help="interleaved blocks of rounds")
    parser.add_argument(
        "--threads", type=int, nargs="+", default=[1, 2], help="PyTorch intra-op thread counts"
    )
    parser.add_argument("--size", type=int, nargs=2, default=(256, 1024))
    args = parser.parse_args(argv)
    keep_freed_memory()  # the same steady allocator for every engine compared
    rows, columns = args.size
    fewest_threads = {}  # op -> PyTorch's median with the fewest threads measured so far
    for threads in args.threads:
        torch.set_num_threads(threads)
        print(
            f"\nforward+backward, ({rows}, {columns}) float32, median of {args.rounds} rounds, "
            f"torch {torch.__version__} with {threads} thread(s), numpy {np.__version__}"
        )
        print(f"{'op':<14} {'ours (us)':>10} {'torch (us)':>11} {'ratio':>7} {'our faults':>11}")
        per_block = max(1, -(-args.rounds // args.blocks))
        for name, ours_step, theirs_step in cases(rows, columns):
            ours_times, theirs_times = [], []
            for block in range(args.blocks):
                order = [(ours_step, ours_times), (theirs_step, theirs_times)]
                for step, times in order if block % 2 == 0 else order[::-1]:
                    times.extend(timed_rounds(step, per_block))
            ours = statistics.median(ours_times)
            theirs = statistics.median(theirs_times)
            faults = page_faults_per_round(ours_step)
            faults = "" if faults is None else f"{faults:.0f}"
            # More threads that take several times longer than fewer: PyTorch's workers
            # waited for a core that another job held (milliseconds, in scheduler slices).
            stalled = theirs > 3 * fewest_threads.setdefault(name, theirs)
            print(
                f"{name:<14} {ours * 1e6:>10.0f} {theirs * 1e6:>11.0f} {ours / theirs:>7.2f} "
                f"{faults:>11}{'  (torch stalled: machine busy)' if stalled else ''}"
            )


if __name__ == "__main__":
    main()
