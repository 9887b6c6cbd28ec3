"""BPPSA's grid on this machine: backward time of the walk and of each scan on a vanilla
tanh RNN (not a test: run it, read the table).

The setting of Wang, Bai and Pekhimenko, "BPPSA: Scaling Back-propagation by Parallel Scan
Algorithm" (MLSys 2020) and of their published code: input size 1, hidden size 20, batch
16, a linear readout of the last state into 10 classes and a cross-entropy loss, sequence
lengths 10 to 30,000. Their figures are GPU times (cuDNN's RNN against their CUDA scan);
ours are CPU times (`time.process_time`, numpy, one BLAS thread), the minimum of rounds
that interleave the schedulers; building the graph is not timed.

    .venv/bin/python benchmarks/bench_bppsa.py                # lengths 10 .. 30,000
    .venv/bin/python benchmarks/bench_bppsa.py --quick        # lengths 10 .. 1,000

Output goes under runs/bench_bppsa/ unless --out says otherwise (--plot names the
picture's path). A scan whose dense Jacobians would exceed --max-memory-mb is skipped
("-"); the blocked scan holds one block of them at a time and always runs.
"""

import argparse
import gc
import os
import sys
import time
from pathlib import Path

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # see bench_scan.py

import numpy as np  # noqa: E402
from _common import plot_file  # noqa: E402

import tinygrad_ops as tg  # noqa: E402
from tinygrad_ops import functional as F  # noqa: E402, N812 (the PyTorch convention)
from tinygrad_ops.scheduler import auto  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
HIDDEN, BATCH, INPUT, CLASSES = 20, 16, 1, 10
SCHEDULERS = ["sequential", "hillis-steele", "blelloch", "blocked", "auto"]
LENGTHS = [10, 100, 1000, 10000, 30000]


def build(steps, seed=0):
    """The loss of the BPPSA RNN over one batch of `steps` steps (PyTorch's init)."""
    generator = np.random.default_rng(seed)
    bound = 1 / np.sqrt(HIDDEN)

    def parameter(*shape):
        return tg.Tensor(generator.uniform(-bound, bound, shape), requires_grad=True)

    weight_ih, weight_hh = parameter(HIDDEN, INPUT), parameter(HIDDEN, HIDDEN)
    bias_ih, bias_hh = parameter(HIDDEN), parameter(HIDDEN)
    readout, readout_bias = parameter(CLASSES, HIDDEN), parameter(CLASSES)
    inputs = (generator.random((steps, BATCH, INPUT)) < 0.5).astype(np.float64)  # Bernoulli
    labels = tg.Tensor(generator.integers(0, CLASSES, BATCH))
    h = tg.zeros(BATCH, HIDDEN, dtype=np.float64)
    for step in range(steps):
        x = tg.Tensor(inputs[step])
        h = (F.linear(x, weight_ih, bias_ih) + F.linear(h, weight_hh, bias_hh)).tanh()
    return F.cross_entropy(F.linear(h, readout, readout_bias), labels)


def skipped(scheduler, steps, max_memory_mb):
    if scheduler not in ("hillis-steele", "blelloch"):
        return False
    factor = 3 if scheduler == "blelloch" else 4  # the Jacobians and the scan's temporaries
    return steps * BATCH * HIDDEN * HIDDEN * 8 * factor > max_memory_mb * 2**20


def time_length(steps, rounds, max_memory_mb):
    runnable = [name for name in SCHEDULERS if not skipped(name, steps, max_memory_mb)]
    best = dict.fromkeys(runnable, float("inf"))
    for _ in range(rounds * max(1, 300 // steps)):
        for name in runnable:
            loss = build(steps)
            gc.collect()
            start = time.process_time()
            loss.backward(scheduler=name)
            best[name] = min(best[name], time.process_time() - start)
    return {name: best.get(name) for name in SCHEDULERS}


def plot(results, path):
    lengths = sorted(results)
    with plot_file(path) as axes:
        for name in SCHEDULERS:
            times = [results[steps][name] for steps in lengths]
            times = [np.nan if value is None else value * 1e3 for value in times]
            axes.plot(lengths, times, marker="o", label=name)
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("sequence length")
        axes.set_ylabel("backward time (ms, CPU)")
        axes.set_title(f"BPPSA's grid here: tanh RNN, hidden {HIDDEN}, batch {BATCH} (ours, numpy)")
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="lengths up to 1,000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-memory-mb", type=float, default=512)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench_bppsa")
    parser.add_argument("--plot", type=Path, default=None)
    args = parser.parse_args(argv)
    lengths = LENGTHS[:3] if args.quick else LENGTHS
    args.out.mkdir(parents=True, exist_ok=True)
    auto.calibrate()
    lines = [
        "| length | " + " | ".join(SCHEDULERS) + " | best scan / walk |",
        "| ---: |" + " ---: |" * (len(SCHEDULERS) + 1),
    ]
    results = {}
    for steps in lengths:
        row = time_length(steps, args.rounds, args.max_memory_mb)
        results[steps] = row
        scans = [row[name] for name in ("hillis-steele", "blelloch", "blocked") if row[name]]
        speedup = row["sequential"] / min(scans) if scans else float("nan")
        cells = ["-" if row[name] is None else f"{row[name] * 1e3:.1f} ms" for name in SCHEDULERS]
        lines.append(f"| {steps:,} | " + " | ".join(cells) + f" | {speedup:.2f}x |")
        print(lines[-1], flush=True)
    (args.out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"plot written to {plot(results, args.plot or args.out / 'bppsa_grid.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
