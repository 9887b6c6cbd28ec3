"""Train a small network of micro `Value`s on the two moons: micro.py is enough to learn.

Every weight is one scalar `Value` (tinygrad_ops/micro.py, under 150 lines); a forward pass
over a batch builds a graph of a few thousand nodes and `backward()` fills every weight's
`.grad`. No Tensor, no optimizer class: the update is one line of plain Python.

Read this file top to bottom: data, model, loss, the training loop, the test accuracy.

    python examples/micro_moons.py               # 400 steps of 8 points, about 10 s
    python examples/micro_moons.py --steps 40    # a quick look
"""

import argparse

import numpy as np

from tinygrad_ops.micro import Value

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--steps", type=int, default=400, help="gradient steps (one batch each)")
parser.add_argument("--batch", type=int, default=8, help="points per step")
parser.add_argument("--seed", type=int, default=0, help="seeds the data and the weights")
args = parser.parse_args()
rng = np.random.default_rng(args.seed)


# 1. Data: two interleaving half circles with noise; label +1 for the upper, -1 for the lower.
def moons(count):
    angle = rng.uniform(0, np.pi, count)
    upper = rng.random(count) < 0.5
    x = np.where(upper, np.cos(angle), 1 - np.cos(angle))
    y = np.where(upper, np.sin(angle), 0.5 - np.sin(angle))
    points = np.stack([x, y], axis=1) + rng.normal(0, 0.1, (count, 2))
    return points, np.where(upper, 1.0, -1.0)


train_points, train_labels = moons(300)
test_points, test_labels = moons(300)


# 2. Model: 2 inputs -> 8 tanh units -> 8 tanh units -> 1 score (its sign is the class).
def layer(fan_in, fan_out):
    """One weight Value per input of every unit, and one bias Value per unit."""
    weights = [[Value(rng.normal(0, fan_in**-0.5)) for _ in range(fan_in)] for _ in range(fan_out)]
    return weights, [Value(0.0) for _ in range(fan_out)]


def apply(params, inputs, last=False):
    weights, biases = params
    outputs = []
    for unit_weights, bias in zip(weights, biases):
        total = bias
        for weight, value in zip(unit_weights, inputs):
            total = total + weight * value
        outputs.append(total if last else total.tanh())
    return outputs


model = [layer(2, 8), layer(8, 8), layer(8, 1)]
parameters = [p for weights, biases in model for row in weights + [biases] for p in row]
print(f"{len(parameters)} parameters, each a Value")


def score(point):
    values = list(point)  # plain numbers: the inputs are constants, not Values
    for index, params in enumerate(model):
        values = apply(params, values, last=index == len(model) - 1)
    return values[0]


# 3. Loss: the logistic loss log(1 + exp(-label * score)), averaged over the batch.
def loss_of(points, labels):
    losses = [(1 + (-label * score(point)).exp()).log() for point, label in zip(points, labels)]
    total = losses[0]
    for each in losses[1:]:
        total = total + each
    return total / len(losses)


# 4. The training loop: a random batch, forward, backward, a step down the gradient.
for step in range(args.steps):
    batch = rng.choice(len(train_labels), size=args.batch, replace=False)
    loss = loss_of(train_points[batch], train_labels[batch])
    for p in parameters:
        p.grad = None  # leaves add up their .grad over backward() calls: clear it first
    loss.backward()
    learning_rate = 1.0 if step < 0.7 * args.steps else 0.2  # smaller steps at the end
    for p in parameters:
        p.data = p.data - learning_rate * p.grad
    if step % max(1, args.steps // 5) == 0 or step == args.steps - 1:
        print(f"step {step + 1:4d}: batch loss {float(loss.data):.4f}")

# 5. Test accuracy: the sign of the score on points the network never saw.
predictions = np.array([np.sign(float(score(point).data)) for point in test_points])
print(f"test accuracy: {100 * (predictions == test_labels).mean():.1f}%")
