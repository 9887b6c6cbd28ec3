"""`einsum`, one op whose backward is again an einsum: the same contraction rule.

Forward: out[output letters] = sum over the other letters of the product of the operands.
Backward for operand k: every product term that contains operand k's element sends it g
times the other factors, so

    d operand_k = einsum(output, other operands -> operand k's letters)(g, others)

Two details make that one einsum too. A letter of operand k that appears nowhere else
(summed inside k alone, as j in "ij->i") is missing from g and the others: a vector of ones
over it broadcasts the gradient back along it. A letter repeated in operand k (a diagonal,
as in "ii->i") cannot be repeated in an einsum's output: the second occurrence is renamed
and an identity matrix ties the two together, so the gradient lands on the diagonal only.

Ellipses ("...") are spelled out as letters first (right-aligned, broadcast as numpy does);
a size-1 dim broadcast against a larger one is summed back by the engine (`unbroadcast`).
An explicit output without "..." sums the ellipsis dims, as PyTorch does.
"""

import string

import numpy as np

from .base import Op, is_tensor, new_tensor
from .checks import ArgumentError, ShapeError

LETTERS = string.ascii_letters


def parse(equation, shapes):
    """(input subscripts, output subscripts) with every ellipsis spelled out as letters.

    >>> parse("...ij,jk", [(5, 2, 3), (3, 4)])
    (['aij', 'jk'], 'aik')
    """
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(shapes):
        raise ArgumentError(
            f"einsum: the equation {equation!r} has {len(terms)} operand(s), got {len(shapes)}"
        )
    bad = set(equation) - set(LETTERS) - set(",.->")
    if bad:
        raise ArgumentError(f"einsum: subscripts must be letters, got {''.join(sorted(bad))!r}")
    free = [letter for letter in LETTERS if letter not in equation]
    widest = 0
    for term, shape in zip(terms, shapes):
        if term.count("...") > 1 or output.count("...") > 1:
            raise ArgumentError(f"einsum: at most one '...' per term, got {equation!r}")
        named = len(term.replace("...", ""))
        if ("..." in term and named > len(shape)) or ("..." not in term and named != len(shape)):
            raise ShapeError(
                f"einsum: subscripts {term!r} do not fit an operand of shape {tuple(shape)}"
            )
        if "..." in term:
            widest = max(widest, len(shape) - named)
    ellipsis = "".join(free[:widest])
    spelled = [
        term.replace("...", ellipsis[widest - (len(shape) - len(term) + 3) :])
        for term, shape in zip(terms, shapes)
    ]
    if not arrow:  # implicit output: the letters used once, in order, after the ellipsis
        joined = "".join(term.replace("...", "") for term in terms)
        output = "..." * bool(widest) + "".join(
            sorted(c for c in set(joined) if joined.count(c) == 1)
        )
    # an explicit output without '...' sums the ellipsis dims, as PyTorch's einsum does
    output = output.replace("...", ellipsis)
    for letter in output:
        if output.count(letter) > 1 or not any(letter in term for term in spelled):
            raise ArgumentError(f"einsum: output letter {letter!r} is repeated or in no operand")
    return spelled, output


def contract(equation, *operands):
    """np.einsum for arrays, the recorded Einsum op when an operand is a Tensor."""
    if any(is_tensor(operand) for operand in operands):
        return Einsum.apply(*operands, equation=equation)
    return np.einsum(equation, *operands, optimize=len(operands) > 2)


class Einsum(Op):
    """out = einsum(equation)(operands);  d operand_k = einsum(output, others -> k's letters)
    (g, others), with ones for k's letters found nowhere else and an identity per repeated
    letter (a diagonal)"""

    __slots__ = ("inputs_subscripts", "output", "sizes", "shapes")

    def forward(self, *operands, equation):
        shapes = [np.shape(operand) for operand in operands]
        self.inputs_subscripts, self.output = parse(equation, shapes)
        self.shapes = shapes
        self.sizes = {}
        for term, shape in zip(self.inputs_subscripts, shapes):
            for letter, size in zip(term, shape):
                if self.sizes.get(letter, 1) == 1:  # a size-1 dim broadcasts to the others
                    self.sizes[letter] = size
        self.save_for_backward(*operands)
        plain = ",".join(self.inputs_subscripts) + "->" + self.output
        try:
            return np.einsum(plain, *operands, optimize=len(operands) > 2)
        except ValueError as error:
            raise ShapeError(f"einsum: {error} (operand shapes {shapes})") from None

    def backward(self, grad_output):
        operands = self.saved_tensors
        return tuple(
            self._operand_gradient(index, grad_output, operands) if needed else None
            for index, needed in enumerate(self.needs_input_grad)
        )

    def _operand_gradient(self, index, grad_output, operands):
        term = self.inputs_subscripts[index]
        others = [t for position, t in enumerate(self.inputs_subscripts) if position != index]
        values = [grad_output, *(v for position, v in enumerate(operands) if position != index)]
        subscripts = [self.output, *others]
        used = set("".join(subscripts))
        free = iter(letter for letter in LETTERS if letter not in self.sizes)
        target = ""
        for letter in term:
            if letter in target:  # a repeated letter: renamed, and tied to it by an identity
                renamed = next(free)
                subscripts.append(letter + renamed)
                values.append(np.eye(self.sizes[letter], dtype=grad_output.dtype))
                target += renamed
                continue
            if letter not in used:  # found only in this operand: broadcast back along it
                subscripts.append(letter)
                values.append(np.ones(self.sizes[letter], dtype=grad_output.dtype))
                used.add(letter)
            target += letter
        return contract(",".join(subscripts) + "->" + target, *values)


def einsum(equation, *operands):
    """Einstein summation as PyTorch's torch.einsum (numpy's subscripts, "..." included);
    the backward of each operand is the einsum of g with the other operands.

    >>> import tinygrad_ops as tg
    >>> einsum("ij,j->i", tg.Tensor([[1.0, 2.0], [3.0, 4.0]]), tg.Tensor([1.0, 1.0])).numpy()
    array([3., 7.], dtype=float32)
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum: the equation must be a string, got {type(equation).__name__}")
    tensors = [
        operand if is_tensor(operand) else new_tensor(np.asarray(operand)) for operand in operands
    ]
    return Einsum.apply(*tensors, equation=equation)
