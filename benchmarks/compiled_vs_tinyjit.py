"""tg.compile beside tinygrad's TinyJit (optional: needs tinygrad and, for its CPU device,
clang; never a dependency of the package).

The same MLP SGD steps as train_step.py (hand numpy, tg.compile, TinyJit) and the same
100-op 4x4 chain (forward and backward), interleaved rounds, medians.

    .venv/bin/python -m pip install tinygrad     # and clang (apt-get install clang)
    OPENBLAS_NUM_THREADS=1 DEV=CPU .venv/bin/python benchmarks/compiled_vs_tinyjit.py
"""

import numpy as np
from _common import chain_loss
from compiled_vs_jax import _row, chains, compare_mlp_steps, parse_rounds
from train_step import LEARNING_RATE, time_interleaved

try:
    from tinygrad import Context, Tensor, TinyJit, nn
except ImportError:  # pragma: no cover - tinygrad is optional
    Tensor = None


def tinyjit_step(x, y, params):
    """The MLP step under TinyJit: SGD on the four parameters, the loss returned."""
    x, y = Tensor(x), Tensor(y)
    parameters = [Tensor(p.copy()) for p in params]  # (the optimizer makes them require grad)
    optimizer = nn.optim.SGD(parameters, lr=LEARNING_RATE)

    @TinyJit
    def step():
        with Context(TRAINING=1):
            optimizer.zero_grad()
            w1, b1, w2, b2 = parameters
            logits = (x.linear(w1.T, b1).relu()).linear(w2.T, b2)
            loss = logits.sparse_categorical_crossentropy(y)
            loss.backward()
            optimizer.step()
            return loss.realize()

    return lambda: step().item()


def tinyjit_chain():
    x = Tensor.full((4, 4), 0.5).contiguous().realize()
    x.requires_grad = True

    @TinyJit
    def chain():
        chain_loss(x).backward()
        grad = x.grad.realize()
        x.grad = None
        return grad

    return lambda: chain().numpy()


def main(argv=None):
    rounds = parse_rounds(__doc__, argv)
    if Tensor is None:
        print("tinygrad is not installed: nothing to compare (see the docstring)")
        return
    print(f"numpy {np.__version__}, tinygrad TinyJit, float32; medians in us")
    compare_mlp_steps("TinyJit", tinyjit_step, rounds, small_repeats=20)
    chain = chains(with_jax=False)
    chain["TinyJit"] = tinyjit_chain()
    print(_row("100-op chain", time_interleaved(chain, rounds, 20)))


if __name__ == "__main__":
    main()
