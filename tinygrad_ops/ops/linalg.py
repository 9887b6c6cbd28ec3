"""Matrix multiplication with numpy's semantics (1-D operands, broadcast batch dims), and the
fused linear layer y = x Wᵀ + b."""

import numpy as np

from .base import Op
from .checks import DtypeError, ShapeError, check_float
from .dtypes import promote
from .jacobian import first_input_dense_kind, weight_matrix
from .kernels import as_matrix, column_sum, reshaped


class MatMul(Op):
    """out = a @ b;  da = g @ b^T, db = a^T @ g

    The shapes force the rule: for a (m, k) and b (k, n), g is (m, n), and the only
    products of g with b or a that give (m, k) and (k, n) are those two. A 1-D operand is
    treated as a row (a) or column (b) vector and the added axis removed again; batch
    dims that were broadcast are summed back by the engine.
    """

    __slots__ = ()
    promotion = staticmethod(promote)

    def jacobian_kind(self, index):
        """On a scanned chain through `a` (x @ W: row-wise, dense) with both operands
        matrices or stacks; `W @ x` mixes the rows of x, a vector operand the axes."""
        a, b = self.inputs[0], self.inputs[1]
        return "dense" if index == 0 and np.ndim(a) >= 2 and np.ndim(b) >= 2 else None

    def jacobian(self, index):
        """J_a = b^T, the same matrix for every row of a."""
        _, b = self.saved_tensors
        return weight_matrix(np.swapaxes(b, -1, -2))

    def forward(self, a, b):
        if np.ndim(a) == 0 or np.ndim(b) == 0:
            raise ShapeError(
                f"matmul: both operands need at least one dim, got shapes {np.shape(a)} "
                f"and {np.shape(b)} (use * for scalars)"
            )
        return self.compute(a, b)

    def compute(self, a, b):
        """a @ b for operands of at least one dim (what a compiled program, whose guards
        hold the shapes fixed, replays)."""
        self.save_for_backward(a, b)
        try:
            return np.matmul(a, b)
        except ValueError:
            inner_a = np.shape(a)[-1]
            inner_b = np.shape(b)[-2] if np.ndim(b) > 1 else np.shape(b)[0]
            if inner_a == inner_b:  # the inner dims agree: the batch dims do not broadcast
                raise ShapeError(
                    f"matmul: shapes {np.shape(a)} and {np.shape(b)} have batch dims "
                    f"{np.shape(a)[:-2]} and {np.shape(b)[:-2]} that cannot be broadcast together"
                ) from None
            raise ShapeError(
                f"matmul: shapes {np.shape(a)} and {np.shape(b)} are not aligned "
                f"({inner_a} != {inner_b})"
            ) from None

    def backward(self, grad_output):
        a, b = self.saved_tensors
        needs_a, needs_b = self.needs_input_grad
        a_is_vector = a.ndim == 1
        b_is_vector = b.ndim == 1
        if a_is_vector and b_is_vector:  # a dot product: out is a scalar
            return grad_output * b, grad_output * a
        if a_is_vector:
            a = a.reshape((1, a.shape[0]))
            grad_output = grad_output.reshape(grad_output.shape[:-1] + (1, grad_output.shape[-1]))
        if b_is_vector:
            b = b.reshape((b.shape[0], 1))
            grad_output = grad_output.reshape(grad_output.shape + (1,))
        grad_a = grad_b = None
        if needs_a:
            grad_a = grad_output @ b.swapaxes(-1, -2)
            if a_is_vector:
                grad_a = grad_a.reshape(grad_a.shape[:-2] + (grad_a.shape[-1],))
        if needs_b:
            if b.ndim == 2 and a.ndim > 2 and not self.graph_mode:
                # One b for every matrix of a batch (x_t W over the steps of a chain, stacked):
                # the sum over the batch is inside one product, not a stack of (k, n) ones
                # (numpy arrays; a create_graph pass records the composed rule below).
                rows = np.broadcast_to(grad_output, a.shape[:-1] + grad_output.shape[-1:])
                grad_b = a.reshape(-1, a.shape[-1]).T @ rows.reshape(-1, rows.shape[-1])
            else:
                grad_b = a.swapaxes(-1, -2) @ grad_output
            if b_is_vector:
                grad_b = grad_b.reshape(grad_b.shape[:-1])
        return grad_a, grad_b


class Linear(Op):
    """y = x Wᵀ + b (W is (out, in));  dx = g W,  dW = gᵀ x,  db = sum of g (batch dims summed)"""

    __slots__ = ()

    jacobian_kind = first_input_dense_kind

    def jacobian(self, index):
        """J_x = W, the same matrix for every row of x."""
        _, weight = self.saved_tensors
        return weight_matrix(weight)

    @staticmethod
    def takes_per_step(index):
        """Only x: its leading axes are batch axes, and dW = gᵀ x and db sum over them, so a
        weight or bias made in each step would get the sum over all the steps."""
        return index == 0

    def forward(self, x, weight, bias):
        self.check(x, weight, bias)
        return self.compute(x, weight, bias)

    @staticmethod
    def check(x, weight, bias):
        """The checks of shapes and dtypes (a compiled program, whose guards hold those
        fixed, makes them once, at capture, and replays `compute`)."""
        check_float("linear", x)
        check_float("linear", weight, "weight")
        if weight.ndim != 2 or x.ndim == 0 or x.shape[-1] != weight.shape[1]:
            raise ShapeError(
                f"linear: input of shape {x.shape} does not match weight of shape "
                f"{weight.shape} (expected weight (out_features, {x.shape[-1] if x.ndim else '?'}))"
            )
        out_features = weight.shape[0]
        if bias is not None and bias.shape != (out_features,):
            raise ShapeError(
                f"linear: bias has shape {bias.shape}, expected ({out_features},) for weight "
                f"of shape {weight.shape}"
            )
        dtype = x.dtype
        if weight.dtype != dtype or (bias is not None and bias.dtype != dtype):
            name, value = ("weight", weight) if weight.dtype != dtype else ("bias", bias)
            raise DtypeError(
                f"linear: {name} has dtype {value.dtype} but the input has dtype {dtype}"
            )

    def compute(self, x, weight, bias):
        """x Wᵀ + b for arguments that passed `check`."""
        needs_x, needs_weight, _ = self.needs_input_grad
        self.save_for_backward(x if needs_weight else None, weight if needs_x else None)
        out = np.matmul(as_matrix(x), weight.T)
        if bias is not None:
            out += bias
        return reshaped(out, x.shape[:-1] + (weight.shape[0],))

    def backward(self, grad_output):
        x, weight = self.saved_tensors
        needs_x, needs_weight, needs_bias = self.needs_input_grad
        g = as_matrix(grad_output)
        grad_x = grad_weight = grad_bias = None
        if needs_x:
            grad_x = reshaped(g @ weight, grad_output.shape[:-1] + (weight.shape[1],))
        if needs_weight:
            grad_weight = g.swapaxes(0, 1) @ as_matrix(x)
        if needs_bias:
            grad_bias = column_sum(g)
        return grad_x, grad_weight, grad_bias
