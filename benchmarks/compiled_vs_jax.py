"""tg.compile beside jax.jit (optional: needs jax, never a dependency of the package).

The same MLP SGD steps as train_step.py (hand numpy, tg.compile, jax.jit), the same
100-op 4x4 chain (forward and backward) and compiled_rnn.py's tanh RNN at 512 steps
(forward and backward: the hand-written BPTT loop, tg.compile with the Blelloch scan,
jax.jit with lax.scan), interleaved rounds, medians. jax runs on the CPU.

    .venv/bin/python -m pip install jax          # into this checkout's .venv, if wanted
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/compiled_vs_jax.py [--rounds 11]
"""

import argparse

import compiled_rnn
import numpy as np
from _common import compiled_chain
from train_step import (
    LEARNING_RATE,
    SIZES,
    CompiledStep,
    NumpyStep,
    make_problem,
    numpy_chain,
    time_interleaved,
)

import tinygrad_ops as tg

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover - jax is optional
    jax = None


def jax_step(x, y, params):
    """The MLP step under jax.jit; the parameters live in a dict between calls."""
    x, y = jnp.asarray(x), jnp.asarray(y)
    rows = jnp.arange(len(y))

    def loss_of(parameters):
        w1, b1, w2, b2 = parameters
        logits = jnp.maximum(x @ w1.T + b1, 0) @ w2.T + b2
        return jnp.mean(jax.nn.logsumexp(logits, axis=1) - logits[rows, y])

    @jax.jit
    def step(parameters):
        loss, grads = jax.value_and_grad(loss_of)(parameters)
        return [p - LEARNING_RATE * g for p, g in zip(parameters, grads)], loss

    state = {"parameters": [jnp.asarray(p) for p in params]}

    def run():
        state["parameters"], loss = step(state["parameters"])
        return float(loss)

    return run


def chains(with_jax=True):
    """The 100-op chain: hand numpy, tg.compile and (`with_jax`) jax.jit (grad of x)."""
    steps = {"numpy": numpy_chain, "compiled": compiled_chain()}
    if not with_jax:
        return steps

    def chain_sum(x):
        y = x
        for _ in range(25):
            y = (jnp.tanh(y * 1.01) + 0.5) * x
        return y.sum()

    jax_grad = jax.jit(jax.grad(chain_sum))
    x_jax = jnp.full((4, 4), 0.5, jnp.float32)
    steps["jax.jit"] = lambda: jax_grad(x_jax).block_until_ready()
    return steps


def main(argv=None):
    rounds = parse_rounds(__doc__, argv)
    if jax is None:
        print("jax is not installed: nothing to compare (see the docstring)")
        return
    jax.config.update("jax_platforms", "cpu")
    print(f"numpy {np.__version__}, jax {jax.__version__} (CPU), float32; medians in us")
    compare_mlp_steps("jax.jit", jax_step, rounds, small_repeats=50)
    print(_row("100-op chain", time_interleaved(chains(), rounds, 20)))
    timings = time_interleaved(rnn_steps(512), rounds, 2)
    print(_row("RNN, 512 steps", timings))
    print(f"{'':>16}  compiled/jax.jit {timings['compiled'] / timings['jax.jit']:.2f}x")


def rnn_steps(steps):
    """compiled_rnn.py's float64 tanh RNN (hidden 8, batch 4, the loss on the last state):
    the hand-written step, the compiled step with the Blelloch scan, jax.jit's."""
    w, u, xs = compiled_rnn.problem(steps)
    inputs = tg.Tensor(xs)
    compiled = compiled_rnn.engine_step(steps, w, u, "blelloch", True)
    return {
        "numpy": lambda: compiled_rnn.numpy_step(w, u, xs),
        "compiled": lambda: compiled(inputs),
        "jax.jit": compiled_rnn.jax_step(w, u, xs),
    }


def parse_rounds(doc, argv):
    """The one option of the comparison scripts: --rounds (11 by default)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11, help="interleaved rounds (median)")
    return parser.parse_args(argv).rounds


def compare_mlp_steps(name, make_step, rounds, small_repeats):
    """Print one row per MLP size of train_step.py: hand numpy, tg.compile and `name`
    (`make_step(x, y, params)` gives its step), interleaved rounds, medians.
    `small_repeats` calls per round below batch 256 (5 from there)."""
    for size in SIZES:
        x, y, params = make_problem(*size)
        steps = {
            "numpy": NumpyStep(x, y, params),
            "compiled": CompiledStep(x, y, params),
            name: make_step(x, y, params),
        }
        timings = time_interleaved(steps, rounds, 5 if size[0] >= 256 else small_repeats)
        print(_row(",".join(map(str, size)), timings))


def _row(label, timings):
    numpy_time = timings["numpy"]
    cells = "  ".join(f"{name} {seconds * 1e6:8.1f}" for name, seconds in timings.items())
    ratios = "  ".join(
        f"{name}/numpy {seconds / numpy_time:.2f}x"
        for name, seconds in timings.items()
        if name != "numpy"
    )
    return f"{label:>16}  {cells}   {ratios}"


if __name__ == "__main__":
    main()
