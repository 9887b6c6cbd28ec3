"""Train a small convolutional network on scikit-learn's 8x8 handwritten digits.

Read this file top to bottom. It is what `tinygrad-ops train --model cnn` does, with the
layers written out: the images as (N, 1, 8, 8) tensors, two 3x3 convolutions, a 2x2 max
pool, a third convolution, another pool, and a linear head. Run it with

    python examples/cnn_digits.py               # 98.6% test accuracy, about 15 s
    python examples/cnn_digits.py --epochs 2    # a quick look

(The time is its CPU time on a 2-core x86-64 machine: the wall time on an idle one, more on a
busy one. It runs with one BLAS thread, as `tinygrad-ops train --model cnn` does.)
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
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=20, help="passes over the training data")
args = parser.parse_args()

# 1. Data: 1,797 images of 8x8 pixels in [0, 1]; labels 0-9. A convolution wants images,
#    (N, channels, height, width), so the rows of 64 pixels are reshaped to (N, 1, 8, 8).
features, labels = data.load_digits()
train_x, test_x, train_y, test_y = data.train_test_split(features, labels, 0.2, seed=0)
train_x, test_x = train_x.reshape(-1, 1, 8, 8), test_x.reshape(-1, 1, 8, 8)
loader = data.DataLoader(train_x, train_y, batch_size=32, shuffle=True, seed=0)
print(f"{len(train_y)} training images, {len(test_y)} test images, each {train_x.shape[1:]}")

# 2. Model. Each Conv2d slides 3x3 kernels over the image (padding=1 keeps it 8x8); each
#    MaxPool2d(2) keeps the largest of every 2x2 block (8x8 -> 4x4 -> 2x2). Flatten turns the
#    64 channels of 2x2 into 256 numbers for the linear head.
tg.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(1, 32, 3, padding=1),
    nn.ReLU(),
    nn.Conv2d(32, 32, 3, padding=1),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Flatten(),
    nn.Dropout(0.2),
    nn.Linear(64 * 2 * 2, 10),
)
print(model)
print(f"{sum(p.size for p in model.parameters())} parameters")

# 3. Optimizer and schedule: Adam at 0.003, the learning rate annealed along a cosine.
optimizer = optim.Adam(model.parameters(), lr=0.003)
scheduler = optim.CosineAnnealingLR(optimizer, T_max=args.epochs)

# 4. Training: forward, loss, backward, step; then one scheduler step per epoch (the loop is
#    in digits_training.py, beside this file; mlp_moons.py writes it out here).
train(model, loader, optimizer, scheduler, args.epochs, test_x, test_y)

# 5. What did the first layer learn? Each of its 32 kernels is a 3x3 pattern; print the
#    one that responds most strongly, on average, to the test images.
with tg.no_grad():
    responses = F.relu(F.conv2d(tg.Tensor(test_x), model[0].weight, model[0].bias, padding=1))
strongest = int(responses.numpy().mean(axis=(0, 2, 3)).argmax())
print(f"final test accuracy {100 * accuracy(model, test_x, test_y):.1f}%")
print(f"kernel {strongest} of the first layer, the most active on the test images:")
print(np.array2string(model[0].weight.numpy()[strongest, 0], precision=2, suppress_small=True))
