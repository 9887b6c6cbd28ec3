"""Train an MLP on scikit-learn's 8x8 handwritten digits, save it, load it back.

Read this file top to bottom. It is what `tinygrad-ops train --dataset digits` does,
without the command-line options: data, model, a training loop with a learning-rate
schedule (written once, in digits_training.py beside this file, for this example and
cnn_digits.py), evaluation in eval mode, and a checkpoint. Run it with

    python examples/mlp_digits.py               # about 98% test accuracy in a few seconds
    python examples/mlp_digits.py --epochs 2    # a quick look
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
from digits_training import accuracy, train

import tinygrad_ops as tg
from tinygrad_ops import data, nn, optim

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=20, help="passes over the training data")
parser.add_argument("--out", default=os.path.join("runs", "examples"), help="output folder")
args = parser.parse_args()

# 1. Data: 1,797 images of 8x8 pixels, flattened to 64 numbers in [0, 1]; labels 0-9.
features, labels = data.load_digits()
train_x, test_x, train_y, test_y = data.train_test_split(features, labels, 0.2, seed=0)
loader = data.DataLoader(train_x, train_y, batch_size=32, shuffle=True, seed=0)
print(f"{len(train_y)} training images, {len(test_y)} test images")

# 2. Model: 64 pixels -> 128 hidden units -> 10 class scores. BatchNorm1d normalises each
#    hidden unit over the batch; Dropout zeroes 10% of them at random while training.
tg.manual_seed(0)
model = nn.Sequential(
    nn.Linear(64, 128),
    nn.BatchNorm1d(128),
    nn.ReLU(),
    nn.Dropout(0.1),
    nn.Linear(128, 10),
)
print(model)
print(f"{sum(p.size for p in model.parameters())} parameters")

# 3. Optimizer and schedule: AdamW, with the learning rate annealed along a cosine.
optimizer = optim.AdamW(model.parameters(), lr=0.01, weight_decay=1e-4)
scheduler = optim.CosineAnnealingLR(optimizer, T_max=args.epochs)

# 4. Training: forward, loss, backward, step; then one scheduler step per epoch (the loop is
#    in digits_training.py, beside this file; mlp_moons.py writes it out here).
train(model, loader, optimizer, scheduler, args.epochs, test_x, test_y)

# 5. Save the trained weights (an .npz file, written atomically) and load them into a
#    fresh model: the same predictions come out.
os.makedirs(args.out, exist_ok=True)
path = os.path.join(args.out, "digits_mlp.npz")
tg.save(model.state_dict(), path)
copy = nn.Sequential(
    nn.Linear(64, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 10)
)
copy.load_state_dict(tg.load(path))
final = accuracy(model, test_x, test_y)
assert accuracy(copy, test_x, test_y) == final
print(f"saved to {path}; the reloaded model scores the same: {100 * final:.1f}%")

# 6. Which digits does it confuse? Count (true, predicted) pairs on the test set.
copy.eval()
with tg.no_grad():
    predicted = copy(tg.Tensor(test_x)).numpy().argmax(axis=1)
confusion = np.zeros((10, 10), dtype=int)
np.add.at(confusion, (test_y, predicted), 1)
mistakes = [(confusion[t, p], t, p) for t in range(10) for p in range(10) if t != p]
for count, true, guess in sorted(mistakes, reverse=True)[:3]:
    if count:
        print(f"  {count} test image(s) of a {true} taken for a {guess}")
