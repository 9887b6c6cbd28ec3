"""Make every picture in docs/ and README.md, from the repository root:

    .venv/bin/python docs/images/make_pictures.py              # all but the measured ones
    .venv/bin/python docs/images/make_pictures.py mlp softmax  # just these
    .venv/bin/python docs/images/make_pictures.py --measured   # also the benchmark plots

Every graph is seeded, so the pictures only change when the code does. `PICTURES` says
which files each maker writes; the two benchmark plots (`MEASURED`) are timings of this
machine, made by their benchmark scripts (minutes), only with --measured.
`tests/test_pictures.py` checks that every picture the docs show is one of these and is
made by this script.
"""

import argparse
import itertools
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import nn, viz

FOLDER = Path(__file__).parent
ROOT = FOLDER.parent.parent


def save(folder, name, root, suffixes=("svg", "png"), **options):
    for suffix in suffixes:
        viz.render(root, folder / f"{name}.{suffix}", **options)
    print(f"wrote {' and '.join(f'{name}.{suffix}' for suffix in suffixes)}")


def html_walk(folder):
    """A screenshot of viz.html's page for a small MLP, at its third backward step."""
    sys.path.insert(0, str(ROOT / "tests"))  # the browser helper lives with the tests
    from browser import chromium_available, screenshot

    if not chromium_available():
        print("html_walk.png not made: headless Chromium and selenium are not installed")
        return
    page = viz.html(viz.examples.mlp(), folder / "html_walk.html")
    screenshot(page.path, folder / "html_walk.png", steps=3, width=1300, height=820)
    page.path.unlink()
    print("wrote html_walk.png")


def mlp(folder):
    """The MLP of viz.examples, one box per layer, forward only."""
    calls = viz.ModuleCalls()
    loss = viz.examples.mlp(calls=calls)
    save(folder, "mlp", loss, groups=calls, title="MLP: forward graph, one box per layer")


def mlp_backward(folder):
    """The same MLP after a recorded backward: ops numbered in the order backward ran
    them, the gradient on every edge, gradient statistics on every tensor."""
    loss = viz.examples.mlp()
    record = viz.backward(loss)
    title = "MLP: backward order (#1 runs first) and the gradient on each edge"
    save(folder, "mlp_backward", loss, show="shape|grad", backward=record, title=title)


def nn_model(folder):
    """An nn model, grouped by module call as `tinygrad-ops train` draws it."""
    nn.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.ReLU(), nn.Linear(8, 3))
    with viz.module_calls(model) as calls:
        loss = F.cross_entropy(model(tg.randn(5, 4, seed=0)), tg.Tensor(np.arange(5) % 3))
    record = viz.backward(loss)
    title = "nn.Sequential(Linear, LayerNorm, ReLU, Linear) + cross-entropy"
    save(folder, "nn_model", loss, groups=calls, backward=record, title=title)


def rnn(folder):
    """An RNN over 4 steps, one box per step."""
    calls = viz.ModuleCalls()
    loss = viz.examples.rnn(steps=4, calls=calls)
    save(folder, "rnn", loss, groups=calls, title="RNN over 4 steps, one box per step")


def rnn_100_steps(folder):
    """Over 100 steps: each step collapsed to one node, steps 2-97 folded into one."""
    calls = viz.ModuleCalls()
    loss = viz.examples.rnn(steps=100, calls=calls)
    record = viz.backward(loss)
    title = "RNN over 100 steps: steps collapsed (depth=0), the middle 96 folded (fold=2)"
    options = {"groups": calls, "depth": 0, "fold": 2, "backward": record, "title": title}
    save(folder, "rnn_100_steps", loss, **options)


def rnn_scan(folder):
    """The scan scheduler: the chain segment it scanned, as one highlighted cluster."""
    loss = viz.examples.rnn(steps=5)
    record = viz.backward(loss, scheduler="blelloch")
    title = "backward(scheduler='blelloch'): the scanned chain segment"
    save(folder, "rnn_scan", loss, backward=record, compact=True, title=title)


def softmax(folder):
    loss = viz.examples.softmax()
    title = "softmax cross-entropy, written out"
    save(folder, "softmax", loss, show="shape|value", backward=True, title=title)


def layernorm(folder):
    loss = viz.examples.layernorm()
    save(folder, "layernorm", loss, backward=True, title="layer norm, written out")


def _scalar_example():
    """The tutorial's L = (a * b + c) * f, with a = 2, b = -3, c = 10, f = -2."""
    leaves = [tg.Tensor(value, requires_grad=True) for value in (2.0, -3.0, 10.0, -2.0)]
    for tensor, name in zip(leaves, "abcf"):
        tensor.name = name
    a, b, c, f = leaves
    return (a * b + c) * f


def tutorial(folder):
    """The tutorial's pictures: the scalar graph before and after backward, broadcasting."""
    save(folder, "tutorial_scalar", _scalar_example(), ("svg",), show="value")
    loss = _scalar_example()
    record = viz.backward(loss)
    save(folder, "tutorial_scalar_backward", loss, ("svg",), show="value|grad", backward=record)
    x = tg.Tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    w = tg.Tensor([0.5, -1.0, 2.0], requires_grad=True)
    w.name = "w"
    loss = (x * w).sum()
    record = viz.backward(loss)
    save(folder, "tutorial_broadcast", loss, ("svg",), show="shape|grad", backward=record)


def demo_training(folder):
    """README's picture: the curves `make demo` writes (runs/demo/training.svg)."""
    from tinygrad_ops import cli

    with tempfile.TemporaryDirectory() as out:
        code = cli.main(["train", "--dataset", "digits", "--no-progress", "--out", out])
        if code != 0:
            raise SystemExit(f"the demo training failed (exit code {code})")
        shutil.copyfile(Path(out) / "training.svg", folder / "demo_training.svg")
    print("wrote demo_training.svg")


# The layers of docs/architecture.md, top to bottom (tests/test_layers.py checks the imports).
LAYERS = [
    ("cli", "cli/: the tinygrad-ops command"),
    ("viz", "viz/: trace, record, step, rules, layout, dot, html (the public API only)"),
    ("library", "functional, nn/, optim, jit (tg.compile), gradcheck, serialize, data"),
    ("schedulers", "scheduler/: sequential, chain finding, scans, cost model, auto"),
    (
        "tensor",
        "tensor.py: the core (data, grad, backward, operators from one binary_operator)\n"
        "tensor_convert, _shape, _math, _reduce, _inplace: its methods; creation",
    ),
    ("engine", "autograd/: graph (the walk, observers), order, backward, function, inplace"),
    ("registry", "scheduler/registry.py: names -> schedulers (no implementation)"),
    ("ops", "ops/: base (the Op contract), dual (array or Tensor), kernels, the op families"),
    ("mode", "mode.py: grad mode, anomaly mode (thread-local)"),
    ("numpy", "numpy"),
]


def layers(folder):
    """The layers of the house: each imports only the ones below it (two documented
    inversions, dashed: tensor.py binds its class into ops.base, and the engine finds a
    scheduler by name through the registry, which the scheduler package fills)."""
    import graphviz

    graph = graphviz.Digraph("layers", graph_attr={"rankdir": "TB", "nodesep": "0.3"})
    graph.attr("node", shape="box", style="rounded,filled", fillcolor="#eef3fb", width="6")
    for name, label in LAYERS:
        graph.node(name, label)
    for (upper, _), (lower, _) in itertools.pairwise(LAYERS):
        graph.edge(upper, lower, label=" imports")
    graph.edge("tensor", "ops", style="dashed", constraint="false", label=" binds Tensor")
    graph.edge("schedulers", "registry", style="dashed", constraint="false", label=" registers")
    for suffix in ("svg", "png"):
        (folder / f"layers.{suffix}").write_bytes(graph.pipe(format=suffix))
    print("wrote layers.svg and layers.png")


def work_depth(folder):
    """docs/scan.md's trade-off: the work (products) and depth (levels of dependent products)
    of each scheduler's backward over a chain, against its length, counted by running the
    scans themselves (`scheduler.scans.work_and_depth`; no timing, so no machine in it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tinygrad_ops.scheduler.scans import work_and_depth

    lengths = [2**power for power in range(2, 14)]
    figure, (work_axes, depth_axes) = plt.subplots(1, 2, figsize=(9, 3.8))
    for method in ("sequential", "hillis-steele", "blelloch", "blocked"):
        counts = [work_and_depth(method, length, block_size=256) for length in lengths]
        label = "blocked (256)" if method == "blocked" else method
        work_axes.plot(lengths, [mm + mv for mm, mv, _ in counts], marker=".", label=label)
        depth_axes.plot(lengths, [depth for _, _, depth in counts], marker=".", label=label)
    for axes, title in ((work_axes, "work: products"), (depth_axes, "depth: levels")):
        axes.set_xscale("log", base=2)
        axes.set_yscale("log", base=2)
        axes.set_xlabel("chain length n (steps)")
        axes.set_title(title)
        axes.grid(True, which="major", alpha=0.3)
    depth_axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(folder / "work_depth.png", dpi=110, metadata={"Software": None})
    plt.close(figure)
    print("wrote work_depth.png")


# Maker -> the files it writes in the folder.
PICTURES = {
    mlp: ("mlp.svg", "mlp.png"),
    mlp_backward: ("mlp_backward.svg", "mlp_backward.png"),
    nn_model: ("nn_model.svg", "nn_model.png"),
    rnn: ("rnn.svg", "rnn.png"),
    rnn_100_steps: ("rnn_100_steps.svg", "rnn_100_steps.png"),
    rnn_scan: ("rnn_scan.svg", "rnn_scan.png"),
    softmax: ("softmax.svg", "softmax.png"),
    layernorm: ("layernorm.svg", "layernorm.png"),
    tutorial: ("tutorial_scalar.svg", "tutorial_scalar_backward.svg", "tutorial_broadcast.svg"),
    demo_training: ("demo_training.svg",),
    html_walk: ("html_walk.png",),  # needs headless Chromium (see tests/browser.py)
    layers: ("layers.svg", "layers.png"),
    work_depth: ("work_depth.png",),
}
# Measured on this machine by the benchmark scripts (minutes each): picture -> command.
MEASURED = {
    "scan_crossover.png": ["benchmarks/report.py", "--picture"],  # (also writes the figures)
    "bppsa_grid.png": ["benchmarks/bench_bppsa.py", "--plot"],
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="makers to run (default: all)")
    parser.add_argument("--measured", action="store_true", help="also the benchmark plots")
    parser.add_argument("--folder", type=Path, default=FOLDER, help="where the files go")
    args = parser.parse_args(argv)
    makers = {maker.__name__: maker for maker in PICTURES}
    unknown = sorted(set(args.names) - set(makers))
    if unknown:
        parser.error(f"unknown picture(s) {unknown}; choose from {sorted(makers)}")
    args.folder.mkdir(parents=True, exist_ok=True)
    for name in args.names or makers:
        makers[name](args.folder)
    if args.measured:
        for picture, command in MEASURED.items():
            script = [sys.executable, str(ROOT / command[0]), *command[1:]]
            subprocess.run([*script, str(args.folder / picture)], check=True, cwd=ROOT)


if __name__ == "__main__":
    main()
