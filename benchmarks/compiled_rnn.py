"""A tanh RNN's training step (forward and backward) eager, under tg.compile with each
scheduler, and written by hand in numpy; `nn.RNN`'s step (its input projected once for
every step, the rest a declared `tg.scan`) eager and compiled; jax.jit with lax.scan
beside them if jax is installed (optional, never a dependency of the package).

h_t = tanh(x_t W + h_{t-1} U), loss = sum(h_T²) (the loss on the last state only: no
gradient enters the chain between its ends), float64; nn.RNN's cell has PyTorch's biases
too, and jax's twin of it writes the cell as PyTorch does. Each figure is the median (the
whole step's minimum beside it) over interleaved rounds. The backward alone is the whole
step minus the forward alone, both timed one after the other in each round (the eager
forward by itself, the compiled one as a program without the backward call). The last
lines are the ratios: the compiled backward with the best scan against the eager
sequential walk, the compiled sequential walk and the hand-written BPTT loop, and the
whole compiled step (the hand-written loop's, nn.RNN's) against jax.jit's.

`--gated` times nn.GRU, nn.LSTM and an LSTM layer on one joint state [h | c] (a tg.scan
the scans take) instead, the walk against the Blelloch scan, eager and compiled.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/compiled_rnn.py [--steps 2048]
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/compiled_rnn.py --gated [--hidden 8]
"""

import argparse
import time

import numpy as np

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops.nn.gated import lstm_step

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover - jax is optional
    jax = None

HIDDEN, BATCH, FEATURES = 8, 4, 3
SCHEDULERS = ["sequential", "blelloch", "hillis-steele", "blocked", "auto"]


def problem(steps, seed=0):
    generator = np.random.default_rng(seed)
    w = generator.standard_normal((FEATURES, HIDDEN)) * 0.5
    u = generator.standard_normal((HIDDEN, HIDDEN)) * 0.3
    return w, u, generator.standard_normal((steps, BATCH, FEATURES))


def engine_step(steps, w, u, scheduler, compiled, backward=True):
    """The step with this engine (`training_step` of the hand-written loop)."""
    weights = [tg.Tensor(w.copy(), requires_grad=True), tg.Tensor(u.copy(), requires_grad=True)]

    def forward(inputs):
        state = tg.zeros(BATCH, HIDDEN, dtype=np.float64)
        for time_step in range(steps):
            state = (inputs[time_step] @ weights[0] + state @ weights[1]).tanh()
        return state

    return training_step(weights, forward, scheduler, compiled, backward)


def training_step(parameters, forward, scheduler, compiled, backward=True):
    """A training step of `forward` (inputs -> the last state h_T), loss = sum(h_T²),
    compiled or not: `run(inputs)` sets the parameters' .grad to None first (outside the
    function, so that every call of a compiled step starts alike)."""
    parameters = list(parameters)

    def step(inputs):
        last = forward(inputs)
        loss = (last * last).sum()
        if backward:
            loss.backward(scheduler=scheduler)
        return loss

    function = tg.compile(step) if compiled else step

    def run(inputs):
        for parameter in parameters:
            parameter.grad = None
        return function(inputs)

    return run


def numpy_step(w, u, xs):
    """Forward and backpropagation through time written by hand."""
    states = [np.zeros((BATCH, HIDDEN))]
    for x in xs:
        states.append(np.tanh(x @ w + states[-1] @ u))
    grad_state = 2 * states[-1]
    grad_w, grad_u = np.zeros_like(w), np.zeros_like(u)
    for t in range(len(xs), 0, -1):
        grad_pre = grad_state * (1 - states[t] * states[t])
        grad_w += xs[t - 1].T @ grad_pre
        grad_u += states[t - 1].T @ grad_pre
        grad_state = grad_pre @ u.T
    return grad_w, grad_u


def numpy_forward(w, u, xs):
    state = np.zeros((BATCH, HIDDEN))
    for x in xs:
        state = np.tanh(x @ w + state @ u)
    return state


def jax_step(w, u, xs):
    """The same step under jax.jit with lax.scan (gradients of w and u)."""

    def loss_of(weights, inputs):
        def cell(state, x):
            state = jnp.tanh(x @ weights[0] + state @ weights[1])
            return state, None

        last, _ = jax.lax.scan(cell, jnp.zeros((BATCH, HIDDEN)), inputs)
        return jnp.sum(last * last)

    grad = jax.jit(jax.grad(loss_of))
    weights, inputs = (jnp.asarray(w), jnp.asarray(u)), jnp.asarray(xs)
    return lambda: [value.block_until_ready() for value in grad(weights, inputs)]


def module_problem(steps, seed=0):
    """nn.RNN(3, 8) in float64 (PyTorch's init, seeded) and its inputs (steps, 4, 3)."""
    tg.manual_seed(seed)
    rnn = tg.nn.RNN(FEATURES, HIDDEN, dtype=np.float64)
    return rnn, np.random.default_rng(seed).standard_normal((steps, BATCH, FEATURES))


def module_step(rnn, scheduler, compiled, backward=True):
    """nn.RNN's training step (`training_step` of its last state)."""
    return training_step(
        rnn.parameters(), lambda inputs: rnn(inputs)[1], scheduler, compiled, backward
    )


def jax_module_step(rnn, xs):
    """nn.RNN's step under jax.jit with lax.scan: the cell as PyTorch writes it,
    tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh), the gradients of the four parameters."""
    names = ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]

    def loss_of(weights, inputs):
        weight_ih, weight_hh, bias_ih, bias_hh = weights

        def cell(state, x):
            state = jnp.tanh(x @ weight_ih.T + bias_ih + state @ weight_hh.T + bias_hh)
            return state, None

        last, _ = jax.lax.scan(cell, jnp.zeros((BATCH, HIDDEN)), inputs)
        return jnp.sum(last * last)

    grad = jax.jit(jax.grad(loss_of))
    weights = tuple(jnp.asarray(getattr(rnn, name).numpy()) for name in names)
    inputs = jnp.asarray(xs)
    return lambda: [value.block_until_ready() for value in grad(weights, inputs)]


def gated_models(hidden, seed=0):
    """nn.GRU and nn.LSTM (3 -> hidden, float64), and the same LSTM's layer as one
    `tg.scan` over the joint state [h | c] (one tensor: a chain the scans take): name ->
    (the parameters, forward(inputs) -> the last h)."""
    tg.manual_seed(seed)
    gru = tg.nn.GRU(FEATURES, hidden, dtype=np.float64)
    lstm = tg.nn.LSTM(FEATURES, hidden, dtype=np.float64)

    def joint(inputs):
        projected = F.linear(inputs, lstm.weight_ih_l0, lstm.bias_ih_l0) + lstm.bias_hh_l0
        weight_t = lstm.weight_hh_l0.T

        def step(state, x):
            h, c = lstm_step(x + state[..., :hidden] @ weight_t, state[..., hidden:])
            return tg.cat([h, c], dim=-1), None

        state, _ = tg.scan(step, tg.zeros(BATCH, 2 * hidden, dtype=np.float64), projected)
        return state[..., :hidden]

    return {
        "GRU": (gru.parameters(), lambda inputs: gru(inputs)[1][0]),
        "LSTM": (lstm.parameters(), lambda inputs: lstm(inputs)[1][0][0]),
        "LSTM [h | c]": (lstm.parameters(), joint),
    }


def gated_main(steps, rounds, sizes=(4, 8)):
    """GRU and LSTM at each hidden size: the walk against the Blelloch scan, eager and
    compiled, and what backward_plan says of each."""
    xs = tg.Tensor(np.random.default_rng(1).standard_normal((steps, BATCH, FEATURES)))
    print(
        f"GRU and LSTM, batch {BATCH}, {steps} steps, float64, loss on the last h, {rounds} rounds"
    )
    print("ms per training step: median (minimum)")
    for hidden in sizes:
        functions = {}
        for name, (parameters, forward) in gated_models(hidden).items():
            parameters = list(parameters)
            plan = tg.backward_plan(forward(xs).sum(), scheduler="blelloch")
            line = next(
                (
                    text
                    for text in str(plan).splitlines()
                    if "segment 0" in text or "walked" in text
                ),
                str(plan).splitlines()[1],
            )
            print(f"  hidden {hidden}, {name}: {line.strip()}")
            for compiled in (False, True):
                for scheduler in ("sequential", "blelloch"):
                    label = f"{name} {'compiled' if compiled else 'eager'} {scheduler}"
                    run = training_step(parameters, forward, scheduler, compiled)
                    functions[label] = (lambda run=run: run(xs), None)
        timings = time_rounds(functions, rounds)
        for label, (wholes, _) in timings.items():
            median, least = np.median(wholes) * 1e3, np.min(wholes) * 1e3
            print(f"  hidden {hidden} {label:32s} {median:9.2f} ({least:9.2f})")


def time_rounds(steps, rounds):
    """Time each step `rounds` times, interleaved (the order rotating). `steps` maps a
    name to (the whole step, its forward alone or None); each round times the forward
    right before the whole step, so that the backward (whole - forward) is measured
    within one round, under the same load. Returns name -> (whole times, backward
    times) in seconds."""
    for whole, forward in steps.values():
        for function in (whole, forward) if forward else (whole,):
            for _ in range(4):  # the compiled ones capture, interpret, compile
                function()
    timings = {name: ([], []) for name in steps}
    names = list(steps)
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            whole, forward = steps[name]
            forward_time = _seconds(forward) if forward else None
            whole_time = _seconds(whole)
            timings[name][0].append(whole_time)
            if forward_time is not None:
                timings[name][1].append(whole_time - forward_time)
    return timings


def _seconds(function):
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2048, help="sequence length")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds")
    parser.add_argument("--gated", action="store_true", help="GRU and LSTM instead")
    parser.add_argument(
        "--hidden", type=int, nargs="+", default=[4, 8], help="hidden sizes (with --gated)"
    )
    args = parser.parse_args(argv)
    steps = args.steps
    if args.gated:
        gated_main(steps, args.rounds, args.hidden)
        return
    w, u, xs = problem(steps)
    inputs = tg.Tensor(xs)
    eager_forward = engine_step(steps, w, u, None, False, False)
    compiled_forward = engine_step(steps, w, u, None, True, False)
    functions = {
        "hand numpy": (lambda: numpy_step(w, u, xs), lambda: numpy_forward(w, u, xs)),
        "eager forward": (lambda: eager_forward(inputs), None),
        "compiled forward": (lambda: compiled_forward(inputs), None),
    }
    for scheduler in SCHEDULERS:
        eager = engine_step(steps, w, u, scheduler, False)
        compiled = engine_step(steps, w, u, scheduler, True)
        if scheduler in ("sequential", "blelloch"):
            functions[f"eager {scheduler}"] = (
                lambda f=eager: f(inputs),
                functions["eager forward"][0],
            )
        functions[f"compiled {scheduler}"] = (
            lambda f=compiled: f(inputs),
            functions["compiled forward"][0],
        )
    rnn, module_xs = module_problem(steps)
    module_inputs = tg.Tensor(module_xs)
    module_forward = module_step(rnn, None, False, False)
    functions["eager nn.RNN forward"] = (lambda: module_forward(module_inputs), None)
    for scheduler in ("sequential", "blelloch"):
        compiled = module_step(rnn, scheduler, True)
        functions[f"compiled nn.RNN {scheduler}"] = (lambda f=compiled: f(module_inputs), None)
    if jax is not None:
        jax.config.update("jax_platforms", "cpu")
        functions["jax.jit lax.scan"] = (jax_step(w, u, xs), None)
        functions["jax nn.RNN's cell"] = (jax_module_step(rnn, module_xs), None)
    timings = time_rounds(functions, args.rounds)
    print(f"tanh RNN, hidden {HIDDEN}, batch {BATCH}, {steps} steps, float64, {args.rounds} rounds")
    print("ms per step: the whole step's median (minimum); the backward's median (whole -")
    print("forward, timed one after the other in each round)")
    report(timings)


def report(timings):
    whole = {name: np.median(values[0]) for name, values in timings.items()}
    backward = {name: np.median(values[1]) for name, values in timings.items() if values[1]}
    for name, (wholes, _) in timings.items():
        line = f"  {name:22s} {whole[name] * 1e3:9.2f} ({np.min(wholes) * 1e3:9.2f})"
        if name in backward:
            line += f"   backward {backward[name] * 1e3:9.2f}"
        print(line)
    scans = [f"compiled {scheduler}" for scheduler in SCHEDULERS[1:]]
    best = min(scans, key=backward.get)
    ratios = [
        f"{backward[other] / backward[best]:.2f}x faster than {other}"
        for other in ("eager sequential", "compiled sequential", "hand numpy")
    ]
    print(f"the best compiled scan, {best}: backward {', '.join(ratios)}")
    if "jax.jit lax.scan" in timings:
        ratio = whole[best] / whole["jax.jit lax.scan"]
        print(f"  whole step {ratio:.2f}x jax.jit lax.scan (medians)")
        module = min(("compiled nn.RNN sequential", "compiled nn.RNN blelloch"), key=whole.get)
        ratio = whole[module] / whole["jax nn.RNN's cell"]
        print(f"nn.RNN: {module}, whole step {ratio:.2f}x jax.jit lax.scan of its cell")


if __name__ == "__main__":
    main()
