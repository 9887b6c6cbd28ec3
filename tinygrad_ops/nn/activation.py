"""Activation layers: thin Modules around the functions in `tinygrad_ops.functional`, so
they can sit in a `Sequential`."""

from .. import functional as F  # noqa: N812 (the PyTorch convention)
from .init import default_generator
from .module import Module


class ReLU(Module):
    """max(x, 0) elementwise.

    >>> import tinygrad_ops as tg
    >>> tg.nn.ReLU()(tg.Tensor([-1.0, 2.0])).numpy()
    array([0., 2.], dtype=float32)
    """

    def forward(self, x):
        return F.relu(x)


class Tanh(Module):
    """tanh(x) elementwise.

    >>> import tinygrad_ops as tg
    >>> tg.nn.Tanh()(tg.Tensor([0.0])).numpy()
    array([0.], dtype=float32)
    """

    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x)) elementwise.

    >>> import tinygrad_ops as tg
    >>> tg.nn.Sigmoid()(tg.Tensor([0.0])).numpy()
    array([0.5], dtype=float32)
    """

    def forward(self, x):
        return F.sigmoid(x)


class GELU(Module):
    """x Φ(x) with the exact normal CDF Φ (PyTorch's default, approximate='none'), or its
    tanh approximation (approximate='tanh').

    >>> import tinygrad_ops as tg
    >>> tg.nn.GELU()(tg.Tensor([0.0])).numpy()
    array([0.], dtype=float32)
    """

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Dropout(Module):
    """In training, zero each element with probability p and scale the rest by 1/(1-p), so
    the expected value is unchanged; in eval mode, the identity. The mask is drawn from
    `generator`, else from the generator `tg.manual_seed` reseeds.

    >>> import tinygrad_ops as tg
    >>> layer = tg.nn.Dropout(0.5).eval()
    >>> layer(tg.ones(3)).numpy()
    array([1., 1., 1.], dtype=float32)
    """

    def __init__(self, p=0.5, generator=None):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be between 0 and 1, got {p}")
        self.p = p
        self.generator = generator

    def forward(self, x):
        generator = default_generator() if self.generator is None else self.generator
        return F.dropout(x, self.p, self.training, generator=generator)

    def extra_repr(self):
        return f"p={self.p}"


class Flatten(Module):
    """The dims from start_dim to end_dim as one (`Tensor.flatten`), as PyTorch's: by
    default (N, d1, d2, ...) to (N, d1 * d2 * ...).

    >>> import tinygrad_ops as tg
    >>> tg.nn.Flatten()(tg.zeros(2, 8, 8)).shape, tg.nn.Flatten(0, 1)(tg.zeros(2, 8, 8)).shape
    ((2, 64), (16, 8))
    """

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class _Elementwise(Module):
    """An activation layer: `function` (a tinygrad_ops.functional function) of the input,
    with the layer's keyword arguments (`options`, shown in its repr)."""

    function = None

    def __init__(self, **options):
        super().__init__()
        self.options = options

    def forward(self, x):
        return type(self).function(x, **self.options)

    def extra_repr(self):
        return ", ".join(f"{name}={value}" for name, value in self.options.items())


class SiLU(_Elementwise):
    """x σ(x) elementwise (swish).

    >>> import tinygrad_ops as tg
    >>> tg.nn.SiLU()(tg.Tensor([0.0])).numpy()
    array([0.], dtype=float32)
    """

    function = staticmethod(F.silu)


class Mish(_Elementwise):
    """x tanh(softplus(x)) elementwise.

    >>> import tinygrad_ops as tg
    >>> tg.nn.Mish()(tg.Tensor([0.0])).numpy()
    array([0.], dtype=float32)
    """

    function = staticmethod(F.mish)


class Softplus(_Elementwise):
    """log(1 + exp(beta x)) / beta elementwise (x past `threshold`).

    >>> import tinygrad_ops as tg
    >>> tg.nn.Softplus(beta=2.0)(tg.Tensor([0.0])).numpy().round(4)
    array([0.3466], dtype=float32)
    """

    function = staticmethod(F.softplus)

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__(beta=beta, threshold=threshold)


class ELU(_Elementwise):
    """x where x > 0, else alpha (exp(x) - 1).

    >>> import tinygrad_ops as tg
    >>> tg.nn.ELU()(tg.Tensor([2.0])).numpy()
    array([2.], dtype=float32)
    """

    function = staticmethod(F.elu)

    def __init__(self, alpha=1.0):
        super().__init__(alpha=alpha)


class CELU(_Elementwise):
    """x where x > 0, else alpha (exp(x / alpha) - 1).

    >>> import tinygrad_ops as tg
    >>> tg.nn.CELU(alpha=2.0)(tg.Tensor([2.0])).numpy()
    array([2.], dtype=float32)
    """

    function = staticmethod(F.celu)

    def __init__(self, alpha=1.0):
        super().__init__(alpha=alpha)


class SELU(_Elementwise):
    """scale · elu(x, alpha) with SELU's constants.

    >>> import tinygrad_ops as tg
    >>> tg.nn.SELU()(tg.Tensor([1.0])).numpy().round(4)
    array([1.0507], dtype=float32)
    """

    function = staticmethod(F.selu)


class Hardsigmoid(_Elementwise):
    """min(max(x + 3, 0), 6) / 6 elementwise.

    >>> import tinygrad_ops as tg
    >>> tg.nn.Hardsigmoid()(tg.Tensor([0.0])).numpy()
    array([0.5], dtype=float32)
    """

    function = staticmethod(F.hardsigmoid)


class Hardswish(_Elementwise):
    """x · hardsigmoid(x) elementwise.

    >>> import tinygrad_ops as tg
    >>> tg.nn.Hardswish()(tg.Tensor([4.0])).numpy()
    array([4.], dtype=float32)
    """

    function = staticmethod(F.hardswish)


class LogSigmoid(_Elementwise):
    """log σ(x) elementwise.

    >>> import tinygrad_ops as tg
    >>> tg.nn.LogSigmoid()(tg.Tensor([0.0])).numpy().round(4)
    array([-0.6931], dtype=float32)
    """

    function = staticmethod(F.logsigmoid)


class Softsign(_Elementwise):
    """x / (1 + |x|) elementwise.

    >>> import tinygrad_ops as tg
    >>> tg.nn.Softsign()(tg.Tensor([1.0])).numpy()
    array([0.5], dtype=float32)
    """

    function = staticmethod(F.softsign)


class ReLU6(_Elementwise):
    """min(max(x, 0), 6) elementwise.

    >>> import tinygrad_ops as tg
    >>> tg.nn.ReLU6()(tg.Tensor([8.0])).numpy()
    array([6.], dtype=float32)
    """

    function = staticmethod(F.relu6)


class Hardtanh(_Elementwise):
    """min(max(x, min_val), max_val) elementwise, as torch.nn.Hardtanh.

    >>> import tinygrad_ops as tg
    >>> tg.nn.Hardtanh(-2.0, 2.0)(tg.Tensor([-3.0, 1.0, 5.0])).numpy()
    array([-2.,  1.,  2.], dtype=float32)
    """

    function = staticmethod(F.hardtanh)

    def __init__(self, min_val=-1.0, max_val=1.0):
        super().__init__(min_val=min_val, max_val=max_val)


class LeakyReLU(_Elementwise):
    """x where x > 0, negative_slope * x elsewhere.

    >>> import tinygrad_ops as tg
    >>> tg.nn.LeakyReLU(0.1)(tg.Tensor([-1.0, 2.0])).numpy()
    array([-0.1,  2. ], dtype=float32)
    """

    function = staticmethod(F.leaky_relu)

    def __init__(self, negative_slope=0.01):
        super().__init__(negative_slope=negative_slope)


class Softmax(Module):
    """softmax along `dim` (which PyTorch's implicit choice, deprecated there, leaves out:
    it must be given).

    >>> import tinygrad_ops as tg
    >>> tg.nn.Softmax(dim=-1)(tg.Tensor([0.0, 0.0])).numpy()
    array([0.5, 0.5], dtype=float32)
    """

    function = staticmethod(F.softmax)

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        if self.dim is None:
            raise ValueError(
                f"{type(self).__name__}: pass dim (PyTorch's implicit choice of a dim is "
                "deprecated, and picks dim 1 or 0 by the input's ndim)"
            )
        return type(self).function(x, dim=self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """log_softmax along `dim` (which must be given, as `Softmax`'s).

    >>> import tinygrad_ops as tg
    >>> tg.nn.LogSoftmax(dim=0)(tg.Tensor([0.0, 0.0])).numpy().round(4)
    array([-0.6931, -0.6931], dtype=float32)
    """

    function = staticmethod(F.log_softmax)


class Identity(Module):
    """The input, unchanged (a placeholder layer); constructor arguments are ignored.

    >>> import tinygrad_ops as tg
    >>> tg.nn.Identity(54, unused="x")(tg.Tensor([1.0])).numpy()
    array([1.], dtype=float32)
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x
