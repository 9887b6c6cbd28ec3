"""Benchmark of the backward schedulers on the RNN formulations people write (not a test:
run it, read the tables).

For every formulation of tests/rnn_formulations.py (the benchmark's form, operands
swapped, bias placed elsewhere, residual, nn.RNNCell's two linears, a loss at every step,
stacked layers, layer norm, dropout, two RNNs, a diagonal chain, an LSTM with two states
and one carrying its joint state [h | c]), batch 4, float64, over hidden sizes and chain
lengths: the backward time of every scheduler (CPU time, `time.process_time`, the minimum
of rounds that interleave the schedulers; building the graph is not timed), and per case
whether a chain was found, the best scan's speedup over the walk, auto / best, auto /
walk, and look / walk: the chain finder alone (what a scan scheduler pays before it knows
whether there is a chain) against the walk. The median speedup column is the best scan's
speedup from the medians of the rounds. The paired columns: auto / walk is the median
(and range) over the rounds of auto's time over the walk's in the same round (a slow
spell of the machine hits both); auto / best (the figure the report's table shows) is the
median (and range) of auto's time over the best scheduler's (by the rounds' medians, the
walk included) in pairs of backwards timed after the rounds, on samples of their own: the
best of near-equal scans by the rounds' own figures is the luckiest of them there, which
alone puts auto 5-10% above it on a loaded machine. `auto` runs its trials (the backwards
it times each way, docs/scan.md) before the rounds: its figures are a training loop's
past them. A WARNING line marks every figure that misses its bound (auto within 1.15x of
the best scheduler and within 1.05x of the walk where nothing is scanned, by the paired
medians; the best scan at least 3x the walk at hidden 4 and 8 and 2048 steps, 2x for the
per-step-loss forms, by the minima and by the medians). Then auto against the walk on a
graph with no chain (a small MLP, where auto's gate is all it adds), and the crossover
plot of the benchmark's form.

    .venv/bin/python benchmarks/bench_scan.py            # the full sweep (long)
    .venv/bin/python benchmarks/bench_scan.py --quick    # a small sweep (a few minutes)
    .venv/bin/python benchmarks/bench_scan.py --scan     # the loops written as tg.scan

Output goes under runs/bench_scan/ unless --out says otherwise (the picture in docs/ is
written only when --plot names it). Scans whose dense Jacobians would not fit in
--max-memory-mb, or that the cost model expects to take more than 5x the walk, are
skipped (shown as "-").
"""

import argparse
import gc
import os
import statistics
import sys
import time
from pathlib import Path

# One BLAS thread: at hidden 32 and more the stacked products are big enough for OpenBLAS
# to start worker threads, which then spin after every product and, on a shared machine,
# steal the cores from whatever runs next. Set before numpy is imported.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402
from _common import plot_file  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from rnn_formulations import FORMULATIONS, build  # noqa: E402

import tinygrad_ops as tg  # noqa: E402
from tinygrad_ops import functional as F  # noqa: E402, N812 (the PyTorch convention)
from tinygrad_ops.autograd import BackwardGraph  # noqa: E402
from tinygrad_ops.scheduler import ScanScheduler, auto  # noqa: E402
from tinygrad_ops.scheduler.calibration import ChainTimes  # noqa: E402

SCHEDULERS = ["sequential", "hillis-steele", "blelloch", "blocked", "auto"]
SCANS = ["hillis-steele", "blelloch", "blocked"]
BATCH = 4
PER_STEP_LOSS = {"loss-every-step"}
LIBRARY = ["tg"]  # "tg-scan" (--scan): the loops written as tg.scan, their chains declared


def found_chains(name, steps, hidden):
    """The chains a forced scan finds: [(length, kind)], from tg.backward_plan."""
    loss, _ = build(name, LIBRARY[0], steps=steps, hidden=hidden, batch=BATCH)
    plan = tg.backward_plan(loss, scheduler=ScanScheduler("blelloch"))
    return [(segment.length, segment.jacobian_kind) for segment in plan.segments]


def time_look(name, steps, hidden):
    """CPU time of the chain finder alone (what every scan scheduler pays before deciding
    on a loop that declares no chain), on a fresh graph."""
    loss, _ = build(name, LIBRARY[0], steps=steps, hidden=hidden, batch=BATCH)
    graph = BackwardGraph([loss], None, False, True)
    graph.send(loss, np.ones_like(loss.data))
    gc.collect()
    start = time.process_time()
    ScanScheduler("blelloch").find(graph)
    return time.process_time() - start


def time_backward(name, steps, hidden, scheduler):
    loss, _ = build(name, LIBRARY[0], steps=steps, hidden=hidden, batch=BATCH)
    gc.collect()
    start = time.process_time()
    loss.backward(scheduler=scheduler)
    return time.process_time() - start


def skip_reason(steps, hidden, scheduler, kinds, max_memory_mb):
    if scheduler not in SCANS or not kinds:
        return None if scheduler not in SCANS else "no chain"
    kind = "dense" if "dense" in kinds else "diagonal"
    if scheduler != "blocked" and kind == "dense":
        factor = 3 if scheduler == "blelloch" else 4
        if steps * BATCH * hidden * hidden * 8 * factor > max_memory_mb * 2**20:
            return "memory"
    estimates = auto.estimate(steps, 5, (BATCH, hidden), kind)
    key = "blocked:256" if scheduler == "blocked" else scheduler
    if estimates.get(key, estimates["blelloch"]) > 5 * estimates["sequential"]:
        return "slow"
    return None


def time_case(name, steps, hidden, rounds, max_memory_mb):
    """Per scheduler the minimum CPU time over `rounds` rounds, each round running every
    scheduler once (interleaved: a slow spell of the machine hits them all), in an order
    that turns from round to round."""
    chains = found_chains(name, steps, hidden)
    kinds = {kind for _, kind in chains}
    runnable = [s for s in SCHEDULERS if not skip_reason(steps, hidden, s, kinds, max_memory_mb)]
    samples = {scheduler: [] for scheduler in runnable + ["look"]}
    # `auto` times its choices on the chains it meets (docs/scan.md) and settles after its
    # trials: its figure is that of a training loop past them.
    for _ in range(2 * ChainTimes.TRIALS):
        time_backward(name, steps, hidden, "auto")
    # A short chain takes about a millisecond: more rounds where one run's noise is large
    # (and at least two per `rounds` for the longest: one slow spell moves a minimum of two).
    for round_number in range(rounds * min(8, max(2, 1024 // steps))):
        # The order turns by one each round, so that no scheduler always runs after the
        # same one (what the one before leaves in the caches and the allocator).
        shift = round_number % len(runnable)
        for scheduler in runnable[shift:] + runnable[:shift]:
            samples[scheduler].append(time_backward(name, steps, hidden, scheduler))
        samples["look"].append(time_look(name, steps, hidden))
    row = {scheduler: min(samples.get(scheduler, [None])) for scheduler in SCHEDULERS + ["look"]}
    row["medians"] = {scheduler: statistics.median(times) for scheduler, times in samples.items()}
    row["samples"] = samples
    # auto against the best scheduler by those medians (the walk included), on samples of
    # their own (the module docstring says why).
    row["versus"] = min((s for s in runnable if s != "auto"), key=row["medians"].get)
    pairs = rounds * min(16, max(6, 4096 // steps))
    row["pairs"] = auto_pairs(name, steps, hidden, row["versus"], pairs)
    return chains, row


def auto_pairs(name, steps, hidden, other, pairs):
    """auto's time over `other`'s, sorted, one ratio per pair of backwards run one after
    the other (a slow spell of the machine hits both), the order alternating (what runs
    first pays for what the pair before left in the caches and the allocator)."""
    ratios = []
    for pair in range(pairs):
        order = ("auto", other) if pair % 2 else (other, "auto")
        times = {scheduler: time_backward(name, steps, hidden, scheduler) for scheduler in order}
        ratios.append(times["auto"] / times[other])
    return sorted(ratios)


def paired(samples, numerator, denominator):
    """The median and range over the rounds of numerator's time / denominator's in the
    same round (a slow spell of the machine hits both: the ratio moves less than either)."""
    ratios = sorted(map(lambda top, bottom: top / bottom, samples[numerator], samples[denominator]))
    return statistics.median(ratios), ratios[0], ratios[-1]


def summarise(name, steps, hidden, chains, row):
    """The figures of one case and the WARNING lines for the bounds it misses."""
    walk = row["sequential"]
    scans = {s: row[s] for s in SCANS if row[s] is not None}
    best_scan = min(scans, key=scans.get) if scans else None
    best_time = min([walk] + list(scans.values()))
    pairs = row["pairs"]
    figures = {
        "found": ", ".join(f"{length} {kind}" for length, kind in chains) or "no",
        "best_scan": best_scan or "-",
        "speedup": walk / scans[best_scan] if best_scan else None,
        # The same from the medians of the rounds (a loaded machine moves the minima too).
        "median_speedup": (
            row["medians"]["sequential"] / row["medians"][best_scan] if best_scan else None
        ),
        "auto_best_minima": row["auto"] / best_time,
        "auto_walk": row["auto"] / walk,
        "look_walk": row["look"] / walk,
        "paired_auto_best": (statistics.median(pairs), pairs[0], pairs[-1]),
        "paired_auto_walk": paired(row["samples"], "auto", "sequential"),
    }
    figures["auto_best"] = figures["paired_auto_best"][0]
    warnings = []
    auto_best = figures["auto_best"]
    if auto_best > 1.15:
        warnings.append(f"auto is {auto_best:.2f}x the best scheduler (bound 1.15, paired median)")
    if row["versus"] == "sequential" and auto_best > 1.05:
        warnings.append(f"auto is {auto_best:.2f}x the walk (bound 1.05, paired median)")
    if chains and hidden in (4, 8) and steps == 2048:
        bound = 2.0 if name in PER_STEP_LOSS else 3.0
        for label, speedup in (
            ("minima", figures["speedup"]),
            ("medians", figures["median_speedup"]),
        ):
            if speedup is None or speedup < bound:
                speedup = speedup or 0.0
                warnings.append(
                    f"best scan {speedup:.2f}x the walk by the {label} (bound {bound:.0f}x)"
                )
    return figures, [f"WARNING {name} hidden {hidden} steps {steps}: {w}" for w in warnings]


def sweep(names, hiddens, lengths, rounds, max_memory_mb, log):
    results = {}
    all_warnings = []
    header = (
        f"{'formulation':16} {'hidden':>6} {'steps':>6} {'walk ms':>8} {'found':>14} "
        f"{'best scan':>13} {'speedup':>7} {'auto/best':>9} {'auto/walk':>9} {'look/walk':>9} "
        f"{'median speedup':>14} {'auto/best paired':>20} {'auto/walk paired':>20}"
    )
    log(header)
    for name in names:
        for hidden in hiddens:
            for steps in lengths:
                chains, row = time_case(name, steps, hidden, rounds, max_memory_mb)
                figures, warnings = summarise(name, steps, hidden, chains, row)
                results[(name, hidden, steps)] = (row, figures)
                speedup = "-" if figures["speedup"] is None else f"{figures['speedup']:.2f}"
                median = figures["median_speedup"]
                median = "-" if median is None else f"{median:.2f}"
                log(
                    f"{name:16} {hidden:6d} {steps:6d} {row['sequential'] * 1e3:8.2f} "
                    f"{figures['found']:>14} {figures['best_scan']:>13} {speedup:>7} "
                    f"{figures['auto_best_minima']:9.2f} {figures['auto_walk']:9.2f} "
                    f"{figures['look_walk']:9.2f} {median:>14} "
                    f"{_paired(figures['paired_auto_best']):>20} "
                    f"{_paired(figures['paired_auto_walk']):>20}"
                )
                for warning in warnings:
                    log(warning)
                all_warnings.extend(warnings)
    return results, all_warnings


def _paired(figure):
    median, low, high = figure
    return f"{median:.2f} ({low:.2f}-{high:.2f})"


def mlp_loss(width, batch, seed=0):
    """A graph with no chain: three `F.linear` layers (ReLU between them), an MSE loss."""
    generator = np.random.default_rng(seed)
    h = tg.Tensor(generator.standard_normal((batch, width)))
    for layer in range(3):
        weight = tg.Tensor(generator.standard_normal((width, width)) * 0.3, requires_grad=True)
        bias = tg.Tensor(np.zeros(width), requires_grad=True)
        h = F.linear(h, weight, bias)
        h = h.relu() if layer < 2 else h
    return F.mse_loss(h, tg.Tensor(generator.standard_normal((batch, width))))


def no_chain(rounds, log):
    """auto against the walk where there is nothing to scan (a small MLP's backward, tens
    of microseconds: the gate's own cost is what shows), interleaved rounds: the ratio of
    the minima, and the median (range) of auto's time over the walk's in the same round."""
    warnings = []
    for width, batch in ((64, 32), (128, 32)):
        samples = {"sequential": [], "auto": []}
        for round_number in range(rounds):
            # The order alternates: what runs second pays for what the first left behind.
            order = ("auto", "sequential") if round_number % 2 else ("sequential", "auto")
            for scheduler in order:
                loss = mlp_loss(width, batch)
                gc.collect()
                start = time.process_time()
                loss.backward(scheduler=scheduler)
                samples[scheduler].append(time.process_time() - start)
        ratio = min(samples["auto"]) / min(samples["sequential"])
        figure = paired(samples, "auto", "sequential")
        log(
            f"{'mlp (no chain)':16} {width:6d} {batch:6d} {min(samples['sequential']) * 1e3:8.3f} "
            f"{'no':>14} {'-':>13} {'-':>7} {ratio:9.2f} {ratio:9.2f} {'-':>9} {'-':>14} "
            f"{'-':>20} {_paired(figure):>20}"
        )
        if figure[0] > 1.05:
            warning = f"auto is {figure[0]:.2f}x the walk (bound 1.05, paired median)"
            warnings.append(f"WARNING mlp width {width}: {warning}")
            log(warnings[-1])
    return warnings


def plot(results, hiddens, lengths, path):
    """Best scan over the walk against the chain length, per hidden size (benchmark form)."""
    with plot_file(path) as axes:
        for hidden in hiddens:
            speedups = [
                results[("benchmark", hidden, steps)][1]["speedup"] or np.nan for steps in lengths
            ]
            axes.plot(lengths, speedups, marker="o", label=f"hidden {hidden}")
        axes.axhline(1.0, color="black", linewidth=0.8)
        axes.set_xscale("log", base=2)
        axes.set_yscale("log", base=2)
        axes.set_xlabel("chain length (RNN steps)")
        axes.set_ylabel("walk time / best scan time (CPU)")
        axes.set_title(f"Best scan vs the walk, tanh RNN, batch {BATCH} (above 1: the scan wins)")
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small sweep (a few minutes)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds per case")
    parser.add_argument("--formulations", default=None, help="comma-separated names")
    parser.add_argument("--hiddens", default=None, help="comma-separated hidden sizes")
    parser.add_argument("--lengths", default=None, help="comma-separated chain lengths")
    parser.add_argument("--max-memory-mb", type=float, default=512)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench_scan")
    parser.add_argument("--plot", type=Path, default=None, help="where the plot goes")
    parser.add_argument("--scan", action="store_true", help="the loops written as tg.scan")
    args = parser.parse_args(argv)
    LIBRARY[0] = "tg-scan" if args.scan else "tg"
    if args.quick:
        hiddens, lengths, rounds = [4, 64], [256, 2048], args.rounds or 2
    else:
        hiddens, lengths = [2, 4, 8, 16, 32, 64, 128], [64, 256, 1024, 2048, 8192]
        rounds = args.rounds or 3
    names = args.formulations.split(",") if args.formulations else list(FORMULATIONS)
    if args.hiddens:
        hiddens = [int(size) for size in args.hiddens.split(",")]
    if args.lengths:
        lengths = [int(length) for length in args.lengths.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    report = (args.out / "report.txt").open("w")

    def log(line):
        print(line, flush=True)
        report.write(line + "\n")

    costs = auto.calibrate()  # once, before timing (auto would do it on first use)
    log(f"calibration: walk {costs['c_visit'] * 1e6:.2f} us/node; CPU time, min of rounds")
    results, warnings = sweep(names, hiddens, lengths, rounds, args.max_memory_mb, log)
    log("(below: the MLP's width and batch in the hidden and steps columns)")
    warnings += no_chain(100 * rounds, log)
    log(f"\n{len(warnings)} WARNING(s) in {len(results) + 2} cases")
    if "benchmark" in names:
        path = plot(results, hiddens, lengths, args.plot or args.out / "scan_crossover.png")
        log(f"plot written to {path}")
    report.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
