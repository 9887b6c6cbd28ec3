"""Write your own differentiable op, and check its gradient with finite differences.

An op needs a forward (the value) and a backward (how a gradient flows back through it).
The backward is easy to get subtly wrong, and a wrong gradient does not crash anything:
training just goes worse. `tg.gradcheck` compares the backward with central differences,
(f(x + eps) - f(x - eps)) / (2 eps), element by element, in float64. Run it with

    python examples/gradcheck_custom_op.py
"""

import numpy as np

import tinygrad_ops as tg


# 1. softplus(x) = log(1 + exp(x)), a smooth relu. Its derivative is the sigmoid:
#    d/dx log(1 + e^x) = e^x / (1 + e^x) = 1 / (1 + e^-x).
class Softplus(tg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)  # backward needs the input
        # log(1 + e^x) overflows for large x; logaddexp(0, x) is the same value, computed safely.
        return tg.Tensor(np.logaddexp(0.0, x.numpy()))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * x.sigmoid()  # chain rule: upstream gradient times d softplus/dx


# 2. The same op (its forward inherited) with a typical mistake: the derivative of
#    log(1 + e^x) taken as 1 / (1 + e^x) (forgetting the e^x from the inner function: the
#    chain rule applied halfway).
class BrokenSoftplus(Softplus):
    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output / (1 + x.exp())


# 3. Use it like any other op: it records itself on the tape and backward() goes through it.
x = tg.Tensor(np.linspace(-3, 3, 7), requires_grad=True)
y = Softplus.apply(x).sum()
y.backward()
print("softplus'(x) from backward:", np.round(x.grad.numpy(), 4))
print("sigmoid(x) for comparison: ", np.round(1 / (1 + np.exp(-x.numpy())), 4))

# 4. gradcheck: the right backward passes; inputs must be float64 for the differences.
inputs = tg.Tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
print("gradcheck(Softplus):", tg.gradcheck(Softplus.apply, (inputs,)))

# 5. The broken backward fails, and the report says where.
passed = tg.gradcheck(BrokenSoftplus.apply, (inputs,), raise_exception=False)
print("gradcheck(BrokenSoftplus):", passed)
print("  ", tg.gradcheck.last_report)
assert not passed

# 6. Composite functions check the same way: here softplus inside a small expression.
weights = tg.Tensor(np.random.default_rng(1).standard_normal((4, 2)), requires_grad=True)
print(
    "gradcheck(softplus(x @ w).mean() over x and w):",
    tg.gradcheck(lambda a, b: Softplus.apply(a @ b).mean(), (inputs, weights)),
)
