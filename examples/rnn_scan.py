"""Train a tanh RNN with each backward scheduler: the same losses, different timings.

The task: read a sequence of noisy numbers and output their mean (a readout of the last
hidden state). h_t = tanh(x_t W + h_{t-1} U + b), prediction = h_T V + c. Every scheduler
starts from the same weights and sees the same batches, so the losses must agree (up to
floating-point reassociation in the scans); the backward times differ.

Last, the whole training step (forward, backward, update) eager and under tg.compile,
side by side, with the sequential walk and with the Blelloch scan: the same losses to the
last bit, the step replayed as one generated function (a compiled scan is one kernel: the
chain analysis runs once, at the capture; the replayed forward writes every step's state
into one stacked buffer, which the scan reads: the program's lines about it are shown).

    .venv/bin/python examples/rnn_scan.py [--steps 128] [--hidden 8] [--iterations 30]

Then `tg.backward_plan` shows what each scheduler does with the graph.
"""

import argparse
import time

import numpy as np

import tinygrad_ops as tg
from tinygrad_ops import Tensor
from tinygrad_ops.scheduler import auto

SCHEDULERS = ["sequential", "hillis-steele", "blelloch", "blocked", "auto"]


def initial_parameters(hidden, seed=0):
    generator = np.random.default_rng(seed)
    return {
        "W": generator.standard_normal((1, hidden)) * 0.5,
        "U": generator.standard_normal((hidden, hidden)) / np.sqrt(hidden),
        "b": np.zeros(hidden),
        "V": generator.standard_normal((hidden, 1)) / np.sqrt(hidden),
        "c": np.zeros(1),
    }


def batch(generator, steps, size):
    inputs = generator.standard_normal((steps, size, 1))
    return inputs, inputs.mean(axis=0)


def forward(parameters, inputs, targets):
    inputs = inputs if isinstance(inputs, Tensor) else Tensor(inputs)
    h = Tensor(np.zeros((inputs.shape[1], parameters["U"].shape[0])))
    for step in range(inputs.shape[0]):
        h = (inputs[step] @ parameters["W"] + h @ parameters["U"] + parameters["b"]).tanh()
    prediction = h @ parameters["V"] + parameters["c"]
    error = prediction - (targets if isinstance(targets, Tensor) else Tensor(targets))
    return (error * error).mean()


def train(scheduler, steps, hidden, iterations, batch_size, learning_rate):
    parameters = {
        name: Tensor(value, requires_grad=True)
        for name, value in initial_parameters(hidden).items()
    }
    generator = np.random.default_rng(1)
    losses = []
    backward_time = 0.0
    for _ in range(iterations):
        inputs, targets = batch(generator, steps, batch_size)
        loss = forward(parameters, inputs, targets)
        start = time.perf_counter()
        loss.backward(scheduler=scheduler)
        backward_time += time.perf_counter() - start
        losses.append(loss.item())
        with tg.no_grad():
            for parameter in parameters.values():
                parameter.data -= learning_rate * parameter.grad.data
                parameter.grad = None
    return np.array(losses), backward_time / iterations


def compiled_comparison(steps, hidden, iterations, batch_size, learning_rate, scheduler):
    """The whole step, eager and compiled: (losses, seconds per step) for each."""
    results = {}
    for compiled in (False, True):
        parameters = {
            name: Tensor(value, requires_grad=True)
            for name, value in initial_parameters(hidden).items()
        }

        def step(inputs, targets, parameters=parameters):
            loss = forward(parameters, inputs, targets)
            loss.backward(scheduler=scheduler)
            with tg.no_grad():
                for parameter in parameters.values():
                    parameter.sub_(learning_rate * parameter.grad)  # an op: replayed
                    parameter.grad = None
            return loss

        if compiled:
            step = tg.compile(step)
        generator = np.random.default_rng(1)
        data = [batch(generator, steps, batch_size) for _ in range(iterations)]
        start = time.perf_counter()
        losses = [step(Tensor(inputs), Tensor(targets)).item() for inputs, targets in data]
        results[compiled] = (np.array(losses), (time.perf_counter() - start) / iterations)
    results["program"] = step.program
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=128, help="sequence length")
    parser.add_argument("--hidden", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    args = parser.parse_args(argv)
    print(
        f"tanh RNN, {args.steps} steps, hidden {args.hidden}, batch {args.batch_size}, "
        f"{args.iterations} SGD steps per scheduler"
    )
    auto.calibrate()  # auto's one-off micro-benchmark, kept out of its timings
    reference = None
    for scheduler in SCHEDULERS:
        losses, backward_time = train(
            scheduler,
            args.steps,
            args.hidden,
            args.iterations,
            args.batch_size,
            args.learning_rate,
        )
        if reference is None:
            reference = losses
        difference = np.max(np.abs(losses - reference) / np.abs(reference))
        print(
            f"  {scheduler:14s} loss {losses[0]:.5f} -> {losses[-1]:.5f}   "
            f"backward {backward_time * 1e3:7.2f} ms/step   "
            f"max relative loss difference from sequential {difference:.1e}"
        )
    parameters = {
        name: Tensor(value, requires_grad=True)
        for name, value in initial_parameters(args.hidden).items()
    }
    inputs, targets = batch(np.random.default_rng(1), args.steps, args.batch_size)
    print()
    print(tg.backward_plan(forward(parameters, inputs, targets), scheduler="auto"))
    print()
    print("whole step (forward, backward, update), eager and tg.compile:")
    for scheduler in ("sequential", "blelloch"):
        results = compiled_comparison(
            args.steps, args.hidden, args.iterations, args.batch_size, args.learning_rate, scheduler
        )
        (eager_losses, eager_time), (compiled_losses, compiled_time) = results[False], results[True]
        same = bool(np.array_equal(eager_losses, compiled_losses))
        print(
            f"  {scheduler:10s} eager {eager_time * 1e3:7.2f} ms/step, compiled "
            f"{compiled_time * 1e3:7.2f} ms/step (the first call captures), "
            f"{eager_time / compiled_time:.2f}x; losses identical to the last bit: {same}"
        )
        for line in str(results["program"]).splitlines():
            if "new stack" in line or "scan of a chain" in line:
                print(f"      program: {line.strip()}")


if __name__ == "__main__":
    main()
