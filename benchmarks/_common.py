"""What several benchmark scripts share: the 100-op chain, eager and compiled (train_step.py,
compiled_vs_jax.py, compiled_vs_tinyjit.py) and the file a plot is saved to (bench_scan.py,
bench_bppsa.py).

The scripts import it from beside them (`python benchmarks/NAME.py` puts this folder first
on sys.path, and so does `tinygrad-ops bench`).
"""

import contextlib

import numpy as np

import tinygrad_ops as tg


def chain_loss(x):
    """The 100-op 4x4 chain: 25 times y = (tanh(1.01 y) + 0.5) x, then the sum. Methods and
    operators only: it runs unchanged on this engine's tensors, PyTorch's, train_step.py's
    BareTensor and tinygrad's."""
    y = x
    for _ in range(25):
        y = ((y * 1.01).tanh() + 0.5) * x
    return y.sum()


def compiled_chain():
    """The 100-op 4x4 chain's forward and backward under tg.compile (grad of x), as a step
    to time: the first call captures, the others replay."""
    x = tg.Tensor(np.full((4, 4), 0.5, dtype=np.float32), requires_grad=True)

    @tg.compile
    def chain(x):
        chain_loss(x).backward()

    def step():
        x.grad = None  # outside: inside the compiled function it would run only once
        chain(x)

    return step


@contextlib.contextmanager
def plot_file(path):
    """Axes of a 7 x 4.5 inch matplotlib figure (no display needed), saved to `path` (its
    folder made if need be) with a legend when the `with` block ends."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    yield axes
    axes.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
