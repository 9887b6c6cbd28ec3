"""Every figure of benchmarks/README.md, measured in one run and written as its tables.

    tinygrad-ops bench report            the full run (a few minutes), rewrites the README's
                                         generated section, docs/images/scan_crossover.png
                                         and docs/tutorial.ipynb, which embeds the picture
    tinygrad-ops bench report -- --quick a small run, for a look (fewer rounds and sizes)

The measurements reuse the benchmark scripts beside this file (train_step.py, bench_nn_ops.py,
bench_scan.py), so a table here and a script's printout time the same steps. Every engine runs
on one thread (BLAS through threadpoolctl, PyTorch by set_num_threads) and is timed in CPU
time, which other jobs on a shared machine disturb far less than the wall clock. Each figure
is a median over interleaved rounds (for the training step and the chain, the range over
repeated runs beside it), and for the schedulers the minimum CPU time over interleaved
rounds, as bench_scan.py reports them.
"""

from __future__ import annotations

import argparse
import os
import platform
import runpy
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # torch's workers sleep, not spin

import numpy as np
from _common import chain_loss, compiled_chain  # beside this file

import tinygrad_ops
from tinygrad_ops import bench

HERE = Path(__file__).resolve().parent
# The plot of the scheduler table; the docs show it from there (tests/test_pictures.py).
PICTURE = HERE.parent / "docs" / "images" / "scan_crossover.png"


def _range(values, scale, unit):
    """'median unit (low-high)' of a list of seconds, in `unit` (scaled by `scale`)."""
    values = sorted(value * scale for value in values)
    median = statistics.median(values)
    digits = 0 if median >= 100 else 1 if median >= 10 else 2
    if len(values) == 1:
        return f"{median:.{digits}f} {unit}"
    return f"{median:.{digits}f} {unit} ({values[0]:.{digits}f}-{values[-1]:.{digits}f})"


def _time(seconds):
    """Seconds as us or ms, three significant figures."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3g} us"
    return f"{seconds * 1e3:.3g} ms"


def _ratio(value):
    return f"{value:.2f}x"


# --- timing -----------------------------------------------------------------------------


def interleaved(steps, rounds, repeats):
    """{name: CPU seconds per call}, the median over `rounds` rounds of `repeats` calls each.

    CPU time (`time.process_time`), not wall time: on a machine shared with other jobs the
    wall clock counts their time too. Every engine runs one thread (BLAS and PyTorch), so its
    CPU time is its time alone. The order turns every round, so that no step always runs
    right after the same other one."""
    samples = {name: [] for name in steps}
    for step in steps.values():  # warm up (a compiled step: captured, then compiled)
        for _ in range(5):
            step()
    names = list(steps)
    for round_number in range(rounds):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.process_time()
            for _ in range(repeats):
                steps[name]()
            samples[name].append((time.process_time() - start) / repeats)
    return {name: statistics.median(values) for name, values in samples.items()}


# --- the training step and the per-op chain (train_step.py) ---------------------------------


def training_step(runs, rounds, log):
    import torch
    import train_step

    rows = []
    for size in train_step.SIZES:
        x, y, params = train_step.make_problem(*size)
        steps = {
            "numpy": train_step.NumpyStep(x, y, params),
            "torch": train_step.TorchStep(x, y, params),
            "eager": train_step.OursStep(x, y, params),
            "compiled": train_step.CompiledStep(x, y, params),
        }
        repeats = 5 if size[0] >= 256 else 40
        timings = [interleaved(steps, rounds, repeats) for _ in range(runs)]
        per = {name: [timing[name] for timing in timings] for name in steps}
        ratios = {
            name: [timing[name] / timing["numpy"] for timing in timings]
            for name in ("eager", "compiled", "torch")
        }
        rows.append((size, per, ratios))
        log(f"training step {size}: eager {_time(statistics.median(per['eager']))}")

    def eager_chain():
        x = tinygrad_ops.Tensor(np.full((4, 4), 0.5, dtype=np.float32), requires_grad=True)
        chain_loss(x).backward()

    def torch_chain():
        x = torch.full((4, 4), 0.5, requires_grad=True)
        chain_loss(x).backward()

    def bare_chain():
        chain_loss(train_step.BareTensor(np.full((4, 4), 0.5, dtype=np.float32))).backward()

    chain_steps = {"eager": eager_chain, "compiled": compiled_chain()}
    chain_steps.update({"numpy": train_step.numpy_chain, "bare": bare_chain, "torch": torch_chain})
    chains = [interleaved(chain_steps, rounds, 20) for _ in range(runs)]
    chain = {name: [run[name] / 100 for run in chains] for name in chain_steps}
    log(f"100-op chain: eager {_time(statistics.median(chain['eager']))} per op")
    return rows, chain


def training_tables(rows, chain):
    lines = [
        "### Training step",
        "",
        "The steps of `train_step.py`: one SGD step of a 2-layer ReLU MLP with cross-entropy, "
        "float32: this engine eager and under `tg.compile`, hand-written numpy (the floor: the "
        "same numpy calls and nothing else) and PyTorch. CPU time per step; ratios to numpy's "
        "step timed in the same rounds (lower is faster).",
        "",
        "| batch, in, hidden, classes | eager | compiled | numpy | PyTorch | eager / numpy "
        "| compiled / numpy | PyTorch / numpy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for size, per, ratios in rows:
        unit, scale = ("ms", 1e3) if statistics.median(per["numpy"]) > 1e-3 else ("us", 1e6)
        cells = [_range(per[name], scale, unit) for name in ("eager", "compiled", "numpy", "torch")]
        cells += [
            _ratio(statistics.median(ratios[name])) for name in ("eager", "compiled", "torch")
        ]
        lines.append(f"| {', '.join(map(str, size))} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "### Per-op overhead",
        "",
        "The chain of `train_step.py`: forward and backward of a 100-op elementwise chain on 4x4 "
        "float32, CPU time per op. The leanest tape (`BareTensor`) is the least a Python "
        "engine on numpy can do: a closure per op, no version counters, no shape or dtype "
        "checks, no hooks, no higher-order gradients.",
        "",
        "| eager | compiled | hand-written numpy | leanest tape | PyTorch |",
        "|---|---|---|---|---|",
        "| "
        + " | ".join(
            _range(chain[name], 1e6, "us")
            for name in ("eager", "compiled", "numpy", "bare", "torch")
        )
        + " |",
    ]
    return lines


# --- the nn ops (bench_nn_ops.py) ---------------------------------------------------------


def nn_ops(rounds, log):
    import bench_nn_ops

    bench.keep_freed_memory()
    rows = []
    for name, ours_step, theirs_step in bench_nn_ops.cases(256, 1024):
        timing = interleaved({"ours": ours_step, "torch": theirs_step}, rounds, 1)
        rows.append((name, timing["ours"], timing["torch"]))
        log(f"nn op {name}: {_time(rows[-1][1])}")
    return rows


def nn_ops_table(rows):
    lines = [
        "### nn ops",
        "",
        "The cases of `bench_nn_ops.py`: forward and backward of each fused op on (256, 1024) "
        "float32, every gradient, against PyTorch (CPU time, medians over interleaved rounds).",
        "",
        "| op | this engine | PyTorch | this engine / PyTorch |",
        "|---|---|---|---|",
    ]
    for name, ours, theirs in rows:
        lines.append(f"| {name} | {_time(ours)} | {_time(theirs)} | {_ratio(ours / theirs)} |")
    return lines


# --- the scan schedulers (bench_scan.py) --------------------------------------------------


def schedulers(hiddens, lengths, rounds, log):
    import bench_scan

    results = []
    for hidden in hiddens:
        for steps in lengths:
            chains, row = bench_scan.time_case("benchmark", steps, hidden, rounds, 512)
            figures, _ = bench_scan.summarise("benchmark", steps, hidden, chains, row)
            results.append((hidden, steps, row, figures))
            log(f"schedulers hidden {hidden}, {steps} steps: walk {_time(row['sequential'])}")
    return results


def scheduler_table(results):
    lines = [
        "### Scan schedulers",
        "",
        "The cases of `bench_scan.py`: backward of a tanh RNN, `tanh(x_t @ W + h @ U + b)`, "
        "batch 4, float64, the loss on the last state; minimum CPU time over interleaved "
        "rounds. walk / best scan above 1 means the scan is faster; `auto` / best is the "
        "median, over pairs of backwards timed one after the other after those rounds, of "
        "`auto`'s time over the best scheduler's (by the rounds' medians; the walk "
        "included), past `auto`'s trials on the same graph (as in a training loop: `auto` "
        "times its first choices) ([docs/scan.md](../docs/scan.md)).",
        "",
        "| hidden | steps | sequential walk | best scan | walk / best scan | `auto` / best |",
        "|---|---|---|---|---|---|",
    ]
    for hidden, steps, row, figures in results:
        best = figures["best_scan"]
        if best == "-":
            best_cell, speedup = "(every scan skipped: too slow)", "-"
        else:
            best_cell, speedup = f"{_time(row[best])} ({best})", _ratio(figures["speedup"])
        lines.append(
            f"| {hidden} | {steps:,} | {_time(row['sequential'])} | {best_cell} | {speedup} "
            f"| {_ratio(figures['auto_best'])} |"
        )
    return lines


def speedup_lines(results):
    """{chain length: [(hidden, walk / best scan)]}: what the picture draws."""
    lines = {}
    for hidden, steps, _, figures in results:
        if figures["speedup"] is not None:
            lines.setdefault(steps, []).append((hidden, figures["speedup"]))
    return lines


def plot_speedup(results, path):
    """walk / best scan against the hidden size, one line per chain length, as a PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 3.8))
    axes = figure.add_subplot()
    lines = speedup_lines(results)
    for steps, points in sorted(lines.items()):
        hiddens, speedups = zip(*points)
        axes.plot(hiddens, speedups, marker="o", label=f"{steps:,} steps")
    axes.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    axes.set_xscale("log", base=2)
    hiddens = sorted({hidden for hidden, *_ in results})
    axes.set_xticks(hiddens, [str(hidden) for hidden in hiddens])
    axes.set_xlabel("hidden size")
    axes.set_ylabel("walk time / best scan time")
    axes.set_title("tanh RNN backward (above 1: the scan is faster)")
    if lines:  # (a run whose every case was skipped has no line to name)
        axes.legend()
    axes.grid(alpha=0.3)
    figure.tight_layout()
    FigureCanvasAgg(figure).print_png(str(path))


# --- the run ------------------------------------------------------------------------------

FULL = {"runs": 3, "rounds": 5, "nn_rounds": 30, "hiddens": [4, 8, 16, 32, 64],
        "lengths": [256, 2048], "scan_rounds": 2}  # fmt: skip
QUICK = {"runs": 1, "rounds": 2, "nn_rounds": 8, "hiddens": [4, 32], "lengths": [256],
         "scan_rounds": 1}  # fmt: skip


def machine_lines(settings, quick):
    import torch

    blas = bench.blas_description()
    return [
        f"Measured by `tinygrad-ops bench report{' -- --quick' if quick else ''}` on "
        f"{bench.machine_description()}: Python {platform.python_version()}, numpy "
        f"{np.__version__} ({blas}), torch {torch.__version__}, "
        f"tinygrad_ops {tinygrad_ops.__version__}. Every engine runs on one thread (BLAS and "
        "PyTorch alike) and is timed in CPU time, so that other jobs on the machine count as "
        "little as they can; a time is the median of interleaved rounds, with the range over "
        "repeated runs in brackets where there are several. Single figures still move between "
        "runs; the ratios, taken between steps timed in the same rounds, move less.",
        "",
    ]


def measure(quick=False, log=print, settings=None):
    """Run every measurement; returns the generated section's Markdown and the scheduler
    results (for `plot_speedup`).
    `settings` (as FULL) replaces the full or quick run's sizes and rounds."""
    settings = settings or (QUICK if quick else FULL)
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent / "tests"))  # bench_scan reads rnn_formulations
    import torch

    torch.set_num_threads(1)
    with bench.one_blas_thread():
        rows, chain = training_step(settings["runs"], settings["rounds"], log)
        nn_rows = nn_ops(settings["nn_rounds"], log)
        scans = schedulers(settings["hiddens"], settings["lengths"], settings["scan_rounds"], log)
    lines = machine_lines(settings, quick)
    lines += training_tables(rows, chain) + [""] + nn_ops_table(nn_rows) + [""]
    lines += scheduler_table(scans)
    lines += ["", "![walk / best scan against the hidden size](../docs/images/scan_crossover.png)"]
    return "\n".join(lines) + "\n", scans


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and sizes")
    parser.add_argument(
        "--readme", type=Path, default=HERE / "README.md", help="the file whose section is written"
    )
    parser.add_argument("--picture", type=Path, default=PICTURE, help="where the plot goes")
    args = parser.parse_args(argv)
    section, scans = measure(args.quick, log=lambda line: print(line, flush=True))
    bench.write_generated(args.readme, section)
    plot_speedup(scans, args.picture)
    print(f"wrote the figures into {args.readme} and {args.picture}")
    if args.picture == PICTURE:  # the notebook embeds the picture: written again with it
        notebook = runpy.run_path(str(HERE.parent / "docs" / "make_notebook.py"))
        notebook["main"]()


if __name__ == "__main__":
    main()
