"""`SmallCNN`, the convolutional network `tinygrad-ops train --model cnn` builds, and
`Unflatten`, which turns rows of pixels back into images."""

from .activation import Dropout, Flatten, ReLU
from .container import Sequential
from .conv import Conv2d, MaxPool2d
from .linear import Linear
from .module import Module


class Unflatten(Module):
    """Reshape dim `dim` into `unflattened_size`, as torch.nn.Unflatten.

    >>> import tinygrad_ops as tg
    >>> tg.nn.Unflatten(1, (1, 8, 8))(tg.zeros(5, 64)).shape
    (5, 1, 8, 8)
    """

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x):
        dim = self.dim % x.ndim
        return x.reshape((*x.shape[:dim], *self.unflattened_size, *x.shape[dim + 1 :]))

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class SmallCNN(Sequential):
    """Rows of C·H·W pixels -> images -> two 3x3 convolutions -> 2x2 max pool -> a third
    convolution -> 2x2 max pool -> dropout -> a Linear head.

    `width` channels in the first two convolutions, 2·width in the third; padding 1 keeps
    each image's size until the pools halve it, so H and W must divide by 4. A `Sequential`
    underneath: its parameters are named as a PyTorch `nn.Sequential` of the same layers.

    >>> import tinygrad_ops as tg
    >>> model = tg.nn.SmallCNN((1, 8, 8), 10, width=4)
    >>> model(tg.zeros(3, 64)).shape
    (3, 10)
    """

    def __init__(self, image_shape, classes, width=32, dropout=0.35):
        channels, height, width_pixels = image_shape
        if height % 4 or width_pixels % 4:
            raise ValueError(
                f"SmallCNN: the image's height and width must divide by 4 (two 2x2 pools), "
                f"got image_shape={tuple(image_shape)}"
            )
        features = 2 * width * (height // 4) * (width_pixels // 4)
        super().__init__(
            Unflatten(1, image_shape),
            Conv2d(channels, width, 3, padding=1),
            ReLU(),
            Conv2d(width, width, 3, padding=1),
            ReLU(),
            MaxPool2d(2),
            Conv2d(width, 2 * width, 3, padding=1),
            ReLU(),
            MaxPool2d(2),
            Flatten(),
            Dropout(dropout),
            Linear(features, classes),
        )


__all__ = ["SmallCNN", "Unflatten"]
