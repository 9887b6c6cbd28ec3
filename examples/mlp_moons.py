"""Train a small MLP on the two-moons data set and draw its decision boundary.

Read this file top to bottom: data, model, loss, optimizer, the training loop, then a
picture of what the network learned. Run it with

    python examples/mlp_moons.py                 # writes runs/examples/moons_boundary.png
    python examples/mlp_moons.py --epochs 5      # a quick look
"""

import os

# One BLAS thread, as `tinygrad-ops train` runs: the products of these small models are just
# large enough for OpenBLAS to start a second thread, which then competes with Python's for
# the cores and slows the run several times. Set before numpy is imported; a value already
# in the environment wins.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse

import numpy as np

import tinygrad_ops as tg
from tinygrad_ops import data, nn, optim
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=100, help="passes over the training data")
parser.add_argument("--out", default=os.path.join("runs", "examples"), help="output folder")
args = parser.parse_args()

# 1. Data: 500 points in 2-D, two interleaving half circles; no straight line separates them.
features, labels = data.make_moons(n_samples=500, noise=0.2, seed=0)
train_x, test_x, train_y, test_y = data.train_test_split(features, labels, 0.2, seed=0)
loader = data.DataLoader(train_x, train_y, batch_size=32, shuffle=True, seed=0)

# 2. Model: 2 inputs -> 16 -> 16 -> 2 class scores ("logits"), tanh in between.
tg.manual_seed(0)  # the same initial weights on every run
model = nn.Sequential(
    nn.Linear(2, 16),
    nn.Tanh(),
    nn.Linear(16, 16),
    nn.Tanh(),
    nn.Linear(16, 2),
)
print(model)

# 3. Optimizer: Adam updates every parameter from its gradient after each batch.
optimizer = optim.Adam(model.parameters(), lr=0.02)

# 4. The training loop: forward, loss, backward (fills each parameter's .grad), step.
for epoch in range(args.epochs):
    epoch_loss = 0.0
    for inputs, targets in loader:
        logits = model(inputs)
        loss = F.cross_entropy(logits, targets)
        optimizer.zero_grad()  # gradients accumulate: clear the previous batch's
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item() * len(targets)
    if epoch % max(1, args.epochs // 5) == 0 or epoch == args.epochs - 1:
        print(f"epoch {epoch + 1:3d}: mean training loss {epoch_loss / len(train_y):.4f}")

# 5. Test accuracy: no gradients needed, so no graph is recorded.
with tg.no_grad():
    predictions = model(tg.Tensor(test_x)).numpy().argmax(axis=1)
print(f"test accuracy: {100 * (predictions == test_y).mean():.1f}%")

# 6. The decision boundary: classify every point of a grid and colour it by the class.
x_min, y_min = features.min(axis=0) - 0.5
x_max, y_max = features.max(axis=0) + 0.5
grid_x, grid_y = np.meshgrid(np.linspace(x_min, x_max, 200), np.linspace(y_min, y_max, 200))
grid = np.stack([grid_x.ravel(), grid_y.ravel()], axis=1).astype(np.float32)
with tg.no_grad():
    probabilities = F.softmax(model(tg.Tensor(grid)), axis=1).numpy()[:, 1]

from matplotlib.backends.backend_agg import FigureCanvasAgg  # (plotting comes last)
from matplotlib.figure import Figure

figure = Figure(figsize=(6, 5))
FigureCanvasAgg(figure)  # draw with Agg: no window needed
axes = figure.subplots()
filled = axes.contourf(
    grid_x, grid_y, probabilities.reshape(grid_x.shape), levels=20, cmap="RdBu", alpha=0.7
)
axes.contour(grid_x, grid_y, probabilities.reshape(grid_x.shape), levels=[0.5], colors="k")
axes.scatter(features[:, 0], features[:, 1], c=labels, cmap="RdBu", edgecolors="k", s=15)
figure.colorbar(filled, ax=axes, label="P(class 1)")
axes.set_title("MLP decision boundary on two moons")
os.makedirs(args.out, exist_ok=True)
path = os.path.join(args.out, "moons_boundary.png")
figure.savefig(path, dpi=100)
print(f"wrote {path}")
