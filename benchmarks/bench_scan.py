"""Benchmark of the backward schedulers on a tanh RNN (not a test: run it, read the tables).

h_t = tanh(x_t W + h_{t-1} U + b), batch 4, loss = sum of the last state, float64.
For hidden sizes 2..128 and lengths 64..8192: the backward time of every scheduler
(best of a few runs; building the graph is not timed), the speedup of each over the
sequential walk, and whether `auto` stays within 1.15x of the best. Then the peak memory
of the scans (tracemalloc) and the crossover plot docs/images/scan_crossover.png.

    .venv/bin/python benchmarks/bench_scan.py            # the full sweep (a few minutes)
    .venv/bin/python benchmarks/bench_scan.py --quick    # a small sweep (under a minute)

Scans whose dense Jacobians would not fit in --max-memory-mb, or that the cost model
expects to take more than 5x the sequential walk, are skipped (shown as "-").
"""

import argparse
import gc
import os
import sys
import time
import tracemalloc
from pathlib import Path

# One BLAS thread. The stacked products of a scan at hidden 32 and more are big enough
# for OpenBLAS to start its worker threads, which then spin after every product: on a
# small machine shared with other work they steal the cores from whatever runs next
# (the scans measured 5x slower at hidden 32, and the walk timed after them 5x slower
# too). Set before numpy is imported; an explicit setting in the environment wins.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402

from tinygrad_ops import Tensor  # noqa: E402
from tinygrad_ops.scheduler import ScanScheduler, auto  # noqa: E402

SCHEDULERS = ["sequential", "hillis-steele", "blelloch", "blocked", "auto"]
SCANS = ["hillis-steele", "blelloch", "blocked"]
BATCH = 4


def build_rnn(steps, hidden, batch=BATCH, seed=0):
    generator = np.random.default_rng(seed)
    W = Tensor(generator.standard_normal((3, hidden)) * 0.5, requires_grad=True)
    U = Tensor(generator.standard_normal((hidden, hidden)) / np.sqrt(hidden), requires_grad=True)
    b = Tensor(np.zeros(hidden), requires_grad=True)
    inputs = generator.standard_normal((steps, batch, 3))
    h = Tensor(np.zeros((batch, hidden)))
    for step in range(steps):
        h = (Tensor(inputs[step]) @ W + h @ U + b).tanh()
    return h.sum(), (W, U, b)


def time_backward(steps, hidden, scheduler, repeats):
    times = []
    for _ in range(repeats):
        loss, _ = build_rnn(steps, hidden)
        gc.collect()
        start = time.perf_counter()
        loss.backward(scheduler=scheduler)
        times.append(time.perf_counter() - start)
        del loss
    # The minimum: on a shared machine the other runs only add noise from elsewhere.
    return min(times)


def skip_reason(steps, hidden, scheduler, max_memory_mb):
    if scheduler not in SCANS:
        return None
    if scheduler != "blocked":
        jacobian_bytes = steps * BATCH * hidden * hidden * 8 * (3 if scheduler == "blelloch" else 4)
        if jacobian_bytes > max_memory_mb * 2**20:
            return "memory"
    estimates = auto.estimate(steps, 5, (BATCH, hidden), "dense")
    if scheduler == "blocked":
        # One block when the chain is shorter than the block: Blelloch's cost.
        expected = estimates.get("blocked:256", estimates["blelloch"])
    else:
        expected = estimates[scheduler]
    if expected > 5 * estimates["sequential"]:
        return "slow"
    return None


def time_row(steps, hidden, repeats, max_memory_mb):
    """Backward times of every scheduler on one case, the runs interleaved (round robin)
    so that a slow spell of the shared machine does not fall on one scheduler only."""
    runnable = [name for name in SCHEDULERS if not skip_reason(steps, hidden, name, max_memory_mb)]
    best = dict.fromkeys(runnable, float("inf"))
    # A short chain takes about a millisecond, where one run's noise is 10-20%: take the
    # minimum over proportionally more runs (up to 16 times as many at 64 steps).
    for _ in range(repeats * min(16, max(1, 1024 // steps))):
        for name in runnable:
            best[name] = min(best[name], time_backward(steps, hidden, name, 1))
    return {name: best.get(name) for name in SCHEDULERS}


def sweep(hiddens, lengths, repeats, max_memory_mb):
    results = {}  # (hidden, steps) -> {scheduler: seconds or None}
    for hidden in hiddens:
        for steps in lengths:
            row = time_row(steps, hidden, repeats, max_memory_mb)
            results[(hidden, steps)] = row
            cells = "  ".join(
                f"{name} {'-' if value is None else f'{value * 1e3:8.2f}'}"
                for name, value in row.items()
            )
            print(f"hidden {hidden:4d} steps {steps:5d}  (ms)  {cells}", flush=True)
    return results


def speedup_table(results):
    print("\nSpeedup over sequential (higher is better); auto / best (must stay <= 1.15):")
    print(
        f"{'hidden':>6} {'steps':>6} "
        + " ".join(f"{name:>14}" for name in SCANS)
        + "   best    auto/best"
    )
    worst_auto = 0.0
    for (hidden, steps), row in results.items():
        sequential = row["sequential"]
        cells = []
        for name in SCANS:
            value = row[name]
            cells.append(f"{'-':>14}" if value is None else f"{sequential / value:14.2f}")
        measured = {
            name: value for name, value in row.items() if value is not None and name != "auto"
        }
        best_name = min(measured, key=measured.get)
        ratio = row["auto"] / measured[best_name]
        worst_auto = max(worst_auto, ratio)
        print(f"{hidden:6d} {steps:6d} " + " ".join(cells) + f"   {best_name:>13} {ratio:6.2f}")
    print(f"worst auto / best: {worst_auto:.2f}")
    return worst_auto


def peak_memory(steps, hidden):
    """tracemalloc peak (numpy allocations included) of one backward, per scheduler."""
    print(f"\nPeak memory of the backward pass (tracemalloc), hidden {hidden}, {steps} steps:")
    rows = [
        ("sequential", "sequential"),
        ("blelloch", "blelloch"),
        ("hillis-steele", "hillis-steele"),
    ]
    for block in (16, 64, 256, 1024):
        scheduler = ScanScheduler("blocked", block_size=block)
        rows.append((f"blocked (block {block})", scheduler))
    for label, scheduler in rows:
        loss, _ = build_rnn(steps, hidden)
        gc.collect()
        tracemalloc.start()
        loss.backward(scheduler=scheduler)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"  {label:24s} {peak / 2**20:8.2f} MiB")


def plot(results, hiddens, lengths, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for hidden in hiddens:
        speedups = []
        for steps in lengths:
            row = results[(hidden, steps)]
            scans = [row[name] for name in SCANS if row[name] is not None]
            speedups.append(row["sequential"] / min(scans) if scans else np.nan)
        axes[0].plot(lengths, speedups, marker="o", label=f"hidden {hidden}")
    axes[0].axhline(1.0, color="black", linewidth=0.8)
    axes[0].set_xscale("log", base=2)
    axes[0].set_yscale("log", base=2)
    axes[0].set_xlabel("chain length (RNN steps)")
    axes[0].set_ylabel("sequential time / best scan time")
    axes[0].set_title("Best scan vs the sequential walk (above 1: the scan wins)")
    axes[0].legend(fontsize=8)
    longest = lengths[-1] if (hiddens[0], lengths[-1]) in results else lengths[0]
    for name in SCHEDULERS:
        times = [results[(hidden, longest)][name] for hidden in hiddens]
        times = [np.nan if value is None else value * 1e3 for value in times]
        axes[1].plot(hiddens, times, marker="o", label=name)
    axes[1].set_xscale("log", base=2)
    axes[1].set_yscale("log")
    axes[1].set_xlabel("hidden size")
    axes[1].set_ylabel("backward time (ms)")
    axes[1].set_title(f"Backward time per scheduler, {longest} steps, batch {BATCH}")
    axes[1].legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    print(f"\nplot written to {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small sweep (under a minute)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--max-memory-mb", type=float, default=512)
    parser.add_argument(
        "--plot", type=Path, default=Path(__file__).parent.parent / "docs/images/scan_crossover.png"
    )
    args = parser.parse_args(argv)
    if args.quick:
        hiddens, lengths, repeats = [2, 8, 32, 128], [64, 512, 2048], args.repeats or 3
    else:
        hiddens = [2, 4, 8, 16, 32, 64, 128]
        lengths = [64, 256, 1024, 2048, 8192]
        repeats = args.repeats or 5
    calibration = auto.calibrate()  # once, before timing (auto would do it on first use)
    print(
        "calibration: sequential visit {:.2f} us/node, chain analysis {:.2f} us/node, "
        "batched step {:.2f} us/node".format(
            calibration["c_visit"] * 1e6,
            calibration["c_analysis"] * 1e6,
            calibration["c_batch"] * 1e6,
        )
    )
    # The headline cases of issue 6 first.
    print("\nHeadline: batch 4, 2048 steps, loss on the last state (ms, best of runs):")
    for hidden in (4, 8, 128):
        row = time_row(2048, hidden, repeats + 2, args.max_memory_mb)
        row = {name: value for name, value in row.items() if value is not None}
        scanned = [(row[name], name) for name in SCANS if name in row]
        best = min(value for name, value in row.items() if name != "auto")
        verdict = "scans skipped (memory/time)"
        if scanned:
            best_scan = min(scanned)
            verdict = (
                f"best scan ({best_scan[1]}) is {row['sequential'] / best_scan[0]:.2f}x the "
                "sequential speed"
            )
        print(
            f"  hidden {hidden:3d}: "
            + ", ".join(f"{name} {value * 1e3:.1f}" for name, value in row.items())
            + f"; {verdict}; auto / best = {row['auto'] / best:.2f}"
        )
    print()
    results = sweep(hiddens, lengths, repeats, args.max_memory_mb)
    speedup_table(results)
    peak_memory(2048 if not args.quick else 1024, 8)
    plot(results, hiddens, lengths, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
