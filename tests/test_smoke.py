import numpy as np

import tinygrad_ops as tg


def test_polynomial_gradient():
    x = tg.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * x.numpy() ** 2)
