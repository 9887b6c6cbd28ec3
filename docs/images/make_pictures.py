"""Draw the pictures of docs/viz.md (SVG and PNG), from the repository root:

    .venv/bin/python docs/images/make_pictures.py

Every graph is seeded, so the pictures only change when the code does.
"""

from pathlib import Path

import numpy as np

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import nn, viz

FOLDER = Path(__file__).parent


def save(name, root, **options):
    for suffix in ("svg", "png"):
        viz.render(root, FOLDER / f"{name}.{suffix}", **options)
    print(f"wrote {name}.svg and {name}.png")


def html_walk():
    """A screenshot of viz.html's page for a small MLP, at its third backward step."""
    from tinygrad_ops.viz.html_browser import chromium_available, screenshot

    if not chromium_available():
        print("html_walk.png not made: headless Chromium and selenium are not installed")
        return
    page = viz.html(viz.examples.mlp(), FOLDER / "html_walk.html")
    screenshot(page.path, FOLDER / "html_walk.png", steps=3, width=1300, height=820)
    page.path.unlink()
    print("wrote html_walk.png")


def main():
    # The MLP of viz.examples, one box per layer, forward only.
    calls = viz.ModuleCalls()
    loss = viz.examples.mlp(calls=calls)
    save("mlp", loss, groups=calls, rankdir="LR", title="MLP: forward graph, one box per layer")

    # The same MLP after a recorded backward: ops numbered in the order backward ran them,
    # the gradient on every edge, gradient statistics on every tensor.
    loss = viz.examples.mlp()
    record = viz.backward(loss)
    save(
        "mlp_backward",
        loss,
        show="shape|grad",
        backward=record,
        rankdir="TB",
        title="MLP: backward order (#1 runs first) and the gradient on each edge",
    )

    # An nn model, grouped by module call as `tinygrad-ops train` draws it.
    nn.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.ReLU(), nn.Linear(8, 3))
    with viz.module_calls(model) as calls:
        loss = F.cross_entropy(model(tg.randn(5, 4, seed=0)), tg.Tensor(np.arange(5) % 3))
    record = viz.backward(loss)
    save(
        "nn_model",
        loss,
        groups=calls,
        backward=record,
        rankdir="LR",
        title="nn.Sequential(Linear, LayerNorm, ReLU, Linear) + cross-entropy",
    )

    # An RNN over 4 steps, one box per step.
    calls = viz.ModuleCalls()
    loss = viz.examples.rnn(steps=4, calls=calls)
    save("rnn", loss, groups=calls, rankdir="TB", title="RNN over 4 steps, one box per step")

    # Over 100 steps: each step collapsed to one node, steps 3-96 folded into one.
    calls = viz.ModuleCalls()
    loss = viz.examples.rnn(steps=100, calls=calls)
    record = viz.backward(loss)
    save(
        "rnn_100_steps",
        loss,
        groups=calls,
        depth=0,
        backward=record,
        rankdir="LR",
        title="RNN over 100 steps: steps collapsed (depth=0), the middle 94 folded",
    )

    # The scan scheduler: the chain segment it scanned, as one highlighted cluster.
    if "blelloch" in tg.available_schedulers():
        loss = viz.examples.rnn(steps=6)
        record = viz.backward(loss, scheduler="blelloch")
        save(
            "rnn_scan",
            loss,
            backward=record,
            compact=True,
            rankdir="LR",
            title="backward(scheduler='blelloch'): the scanned chain segment",
        )

    loss = viz.examples.softmax()
    save(
        "softmax",
        loss,
        show="shape|value",
        backward=True,
        rankdir="TB",
        title="softmax cross-entropy, written out",
    )
    loss = viz.examples.layernorm()
    save("layernorm", loss, backward=True, rankdir="TB", title="layer norm, written out")
    html_walk()


if __name__ == "__main__":
    main()
