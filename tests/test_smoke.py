import numpy as np
from helpers import check_op

import tinygrad_ops as tg


def test_polynomial_gradient():
    x = tg.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * x.numpy() ** 2)


def test_check_op_on_a_composite():
    check_op(
        lambda a, b: ((a @ b).tanh() * 2 + a.sum(axis=1, keepdims=True)).exp().mean(),
        lambda a, b: ((a @ b).tanh() * 2 + a.sum(1, keepdim=True)).exp().mean(),
        (2, 3),
        (3, 4),
    )
