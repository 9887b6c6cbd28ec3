"""The primitives: one `Op` subclass each, forward and backward side by side.

`REGISTRY` maps each primitive's name to its class; the engine, the schedulers and the
renderer read it (to list ops, find Jacobian rules, and label nodes).
"""

from .elementwise import (
    Abs,
    Add,
    Cast,
    Clip,
    Div,
    Exp,
    Log,
    Maximum,
    Mul,
    Neg,
    Pow,
    PowScalar,
    Relu,
    Sigmoid,
    Sqrt,
    Sub,
    Tanh,
    Where,
)
from .linalg import MatMul
from .reduce import Max, Min, Sum
from .shape import BroadcastTo, Concatenate, GetItem, Reshape, ScatterAdd, Stack, Transpose

PRIMITIVES = (
    Add, Sub, Mul, Div, Neg, Pow, PowScalar, Exp, Log, Sqrt, Abs, Tanh, Sigmoid, Relu,
    Maximum, Where, Clip, Cast, Sum, Max, Min, Reshape, Transpose, BroadcastTo, GetItem,
    ScatterAdd, Stack, Concatenate, MatMul,
)  # fmt: skip
REGISTRY = {op.__name__: op for op in PRIMITIVES}


def register(op_class):
    """Add an op class to the registry (the nn ops and user extensions use this)."""
    REGISTRY[op_class.__name__] = op_class
    return op_class


__all__ = ["PRIMITIVES", "REGISTRY", "register", *(op.__name__ for op in PRIMITIVES)]
