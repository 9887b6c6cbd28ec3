"""What tg.compile's first calls cost, against a warm eager step (docs/compile.md).

The step is that of `tinygrad-ops train`: an MLP 64-128-10, batch 32, Adam, forward
before zero_grad(). Each round times one warm eager step, then a new model's compiled
step over its first ten calls: the capture (an eager run with the recorder watching),
the replays from the kernel list, the replay that compiles the program, the one that
compiles the guards, and the compiled replays after. The code cache is emptied before
each capture, so every round writes and compiles its text anew (a new program's cost);
`--cached` keeps it (a new batch size or another instance of the same model and step).
Figures: medians over the rounds, each as a ratio to the median eager step.

Run:  .venv/bin/python benchmarks/compiled_capture.py  [--rounds 30] [--cached]
"""

import argparse
import time

import numpy as np

import tinygrad_ops as tg
from tinygrad_ops.cli.train import make_step
from tinygrad_ops.jit import codegen

CALLS = 10


def build(seed):
    """A new model, its Adam, and the train command's step over them (not compiled)."""
    tg.manual_seed(seed)
    model = tg.nn.Sequential(tg.nn.Linear(64, 128), tg.nn.ReLU(), tg.nn.Linear(128, 10))
    optimizer = tg.optim.Adam(model.parameters(), lr=1e-3)
    return make_step(model, optimizer, compiled=False)


def timed(function, *args):
    start = time.perf_counter()
    function(*args)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--cached", action="store_true", help="keep the code cache")
    parser.add_argument("--quick", action="store_true", help="5 rounds (a smoke run)")
    args = parser.parse_args()
    rounds = 5 if args.quick else args.rounds
    generator = np.random.default_rng(0)
    x = tg.Tensor(generator.standard_normal((32, 64)).astype(np.float32))
    y = tg.Tensor(generator.integers(0, 10, 32))
    eager = build(0)
    for _ in range(50):
        eager(x, y)
    eager_times, call_times = [], []
    for round_number in range(rounds):
        eager_times.append(timed(eager, x, y))
        if not args.cached:
            codegen._CODE.clear()
        step = tg.compile(build(round_number + 1))
        call_times.append([timed(step, x, y) for _ in range(CALLS)])
    eager_step = float(np.median(eager_times))
    medians = np.median(np.array(call_times), axis=0) / eager_step
    print(f"eager step (median of {rounds}): {eager_step * 1e6:.0f} us")
    text = "cached" if args.cached else "new"
    print(f"compiled step's calls / eager step, the text {text} (median of {rounds} rounds):")
    for number, ratio in enumerate(medians, start=1):
        print(f"  call {number:>2}  {ratio:5.2f}x")


if __name__ == "__main__":
    main()
