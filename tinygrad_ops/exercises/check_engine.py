"""Checks of value.py, unbroadcast.py and tape.py: the engine, built by the student.

A student's `Value` is run on random graphs beside the engine (`tinygrad_ops.Tensor`), on
chains deeper than Python's recursion limit, and finally trains a small network on the
two moons. The walk over a tape is checked on tapes recorded from the same programs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import tinygrad_ops as tg

from .checking import (
    Check,
    Diagnosis,
    MismatchError,
    close,
    engine_gradients,
    gives,
    matches,
    numerical_gradient,
    raises,
    random,
)

# ---------------------------------------------------------------------------- value.py


@dataclass
class Rule:
    """One primitive of value.py: how to apply it to Values (or Tensors), how many
    operands it takes, and its rule as the docstring states it."""

    apply: Callable
    arity: int
    formula: str


RULES = {
    "__add__": Rule(lambda a, b: a + b, 2, "da = g, db = g"),
    "__mul__": Rule(lambda a, b: a * b, 2, "da = g * b, db = g * a"),
    "__pow__": Rule(lambda a: a**3, 1, "da = g * n * a ** (n - 1)"),
    "tanh": Rule(lambda a: a.tanh(), 1, "da = g * (1 - tanh(a) ** 2)"),
    "exp": Rule(lambda a: a.exp(), 1, "da = g * exp(a)"),
    "log": Rule(lambda a: a.log(), 1, "da = g / a"),
}


def _operands(count, seed):
    return [np.abs(random((3,), seed + i)) + 0.3 for i in range(count)]


def _rule_check(module, op):
    """The rule of `op` against central differences of its own forward."""
    apply, arity = RULES[op].apply, RULES[op].arity
    arrays = _operands(arity, 40)
    grad_output = random((3,), 41)
    out = apply(*[module.Value(a) for a in arrays])
    close(out.data, apply(*[tg.Tensor(a) for a in arrays]).numpy(), f"{op}'s forward")
    grads = out.rule(grad_output.copy())
    if not isinstance(grads, tuple) or len(grads) != arity:
        raise MismatchError(f"the rule of {op} must return a tuple of {arity} gradient(s)")
    for index, grad in enumerate(grads):

        def forward(v, index=index):
            values = [module.Value(v if i == index else a) for i, a in enumerate(arrays)]
            return float((apply(*values).data * grad_output).sum())

        close(grad, numerical_gradient(forward, arrays[index]), f"operand {index}", rtol=1e-5)


def _check_rule(op):
    return Check(
        f"the rule of {op.strip('_')} is the derivative of its forward: {RULES[op].formula}",
        op,
        lambda module: _rule_check(module, op),
    )


def _diamond(Value):
    """A graph where nodes are reached by two paths: a -> (b, c) -> d, plus a shortcut."""
    a = Value(0.7)
    b = a * 2.0
    c = a.tanh()
    d = b * c + a
    return a, d


def _order_check(module):
    _, root = _diamond(module.Value)
    order = module.topological_order(root)
    if order is None or len({id(node) for node in order}) != len(order):
        raise MismatchError("a node appears more than once (or the order is None)")
    position = {id(node): index for index, node in enumerate(order)}
    reached, stack = set(), [root]
    while stack:
        node = stack.pop()
        if id(node) in reached:
            continue
        reached.add(id(node))
        stack.extend(node.parents)
    if set(position) != reached:
        raise MismatchError(f"{len(position)} nodes listed; the graph has {len(reached)}")
    for node in order:
        for parent in node.parents:
            if position[id(parent)] > position[id(node)]:
                raise MismatchError(f"a {node.op or 'leaf'} node is listed before its parent")
    if order[-1] is not root:
        raise MismatchError("the root is not last")


def _chain(Value, length):
    x = Value(0.3)
    y = x
    for _ in range(length):
        y = (y * 1.0001).tanh() + 0.01
    return x, y


def _deep_order(module):
    _, y = _chain(module.Value, 4000)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # Python's default, whatever the caller set
    try:
        order = module.topological_order(y)
    finally:
        sys.setrecursionlimit(limit)
    if len(order) != 20001:
        raise MismatchError(f"{len(order)} nodes listed in a chain of 20,001")


OPS = ("+", "*", "-", "/", "tanh", "exp", "log", "square", "reciprocal", "number")


def _apply(name, a, b):
    return {
        "+": lambda: a + b,
        "*": lambda: a * b,
        "-": lambda: a - b,
        "/": lambda: a / (b * b + 1.0),  # a divisor away from zero
        "tanh": lambda: a.tanh(),
        "exp": lambda: (a * 0.5).exp(),
        "log": lambda: (a * a + 1.0).log(),
        "square": lambda: a**2,
        "reciprocal": lambda: (a * a + 0.5) ** -1,
        "number": lambda: 2.0 - 3.0 * a,
    }[name]()


def _program(seed, steps=14):
    """A random graph as (op, operand, operand) positions: nodes are reused (shared)."""
    rng = np.random.default_rng(seed)
    program = []
    for step in range(steps):
        count = 3 + step
        program.append((OPS[rng.integers(len(OPS))], *rng.integers(count, size=2).tolist()))
    return program


def _run_program(program, leaves):
    nodes = list(leaves)
    for name, first, second in program:
        result = _apply(name, nodes[first], nodes[second])
        nodes.append(result.tanh() if name in ("exp", "/", "square") else result)
    total = nodes[-1]
    for node in nodes[-4:-1]:
        total = total + node
    return total


def _random_graphs(module):
    for seed in range(8):
        arrays = [random((2,), 50 + 3 * seed + i, 0.8) for i in range(3)]
        program = _program(seed)
        values = [module.Value(a) for a in arrays]
        loss = _run_program(program, values)
        loss.backward()
        expected_loss, expected = engine_gradients(
            lambda *t, program=program: _run_program(program, t), arrays, np.ones(2)
        )
        close(loss.data, expected_loss, f"graph {seed}: the loss")
        for index, (value, grad) in enumerate(zip(values, expected)):
            if grad is None and value.grad is None:
                continue  # a leaf the loss does not use
            close(value.grad, np.zeros(2) if grad is None else grad, f"graph {seed}: leaf {index}")


def _used_twice(module):
    x = module.Value(3.0)
    (x * x).backward()
    close(x.grad, 6.0, "d(x * x)/dx at x = 3")
    y = module.Value(2.0)
    (y + y * 4.0).backward()
    close(y.grad, 5.0, "d(y + 4y)/dy")


def _deep_backward(module):
    x, y = _chain(module.Value, 4000)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        y.backward()
    finally:
        sys.setrecursionlimit(limit)
    engine_x, engine_y = _chain(lambda v: tg.Tensor(v, requires_grad=True), 4000)
    engine_y.backward()
    close(x.grad, engine_x.grad.numpy(), "the first node's gradient", rtol=1e-10)


def _twice(module):
    x = module.Value(np.array([0.5, -1.0]))
    hidden = x * x
    loss = hidden.tanh() + hidden.exp()
    loss.backward()
    first_x, first_hidden = np.array(x.grad), np.array(hidden.grad)
    loss.backward()
    close(x.grad, 2 * first_x, "a leaf after two backward() calls (they add up)")
    close(hidden.grad, first_hidden, "an intermediate after two calls (this call's only)")


def _shared_gradient(module):
    x = module.Value(np.array([1.0, 2.0]))
    y = x + x
    z = y + y
    z.backward()
    close(x.grad, [4.0, 4.0], "x of z = (x + x) + (x + x)")
    close(y.grad, [2.0, 2.0], "y of z = y + y")


def moons(count, seed):
    """Two interleaving half circles with noise: points (count, 2), labels +1 / -1."""
    rng = np.random.default_rng(seed)
    angle = rng.uniform(0, np.pi, count)
    upper = rng.random(count) < 0.5
    x = np.where(upper, np.cos(angle), 1 - np.cos(angle))
    y = np.where(upper, np.sin(angle), 0.5 - np.sin(angle))
    return np.stack([x, y], 1) + rng.normal(0, 0.1, (count, 2)), np.where(upper, 1.0, -1.0)


def _train_moons(module, steps=250, hidden=8, batch=8):
    """A 2-hidden-1 tanh network of the student's Values; its test accuracy."""
    Value = module.Value
    rng = np.random.default_rng(0)
    first = [[Value(rng.normal(0, 0.7)) for _ in range(2)] for _ in range(hidden)]
    first_bias = [Value(0.0) for _ in range(hidden)]
    second = [Value(rng.normal(0, hidden**-0.5)) for _ in range(hidden)]
    parameters = [w for row in first for w in row] + first_bias + second

    def score(point):
        units = [(w[0] * point[0] + w[1] * point[1] + b).tanh() for w, b in zip(first, first_bias)]
        total = units[0] * second[0]
        for unit, weight in zip(units[1:], second[1:]):
            total = total + unit * weight
        return total

    points, labels = moons(200, 1)
    for step in range(steps):
        chosen = rng.choice(len(labels), batch, replace=False)
        loss = None
        for index in chosen:
            term = (1.0 + (-labels[index] * score(points[index])).exp()).log()
            loss = term if loss is None else loss + term
        loss = loss / float(batch)
        for p in parameters:
            p.grad = None
        loss.backward()
        for p in parameters:
            p.data = p.data - (1.0 if step < 0.7 * steps else 0.2) * p.grad
    test_points, test_labels = moons(200, 2)
    signs = [np.sign(float(score(point).data)) for point in test_points]
    return float(np.mean(np.array(signs) == test_labels))


def _moons_check(module):
    accuracy = _train_moons(module)
    if accuracy < 0.9:
        raise MismatchError(f"test accuracy {100 * accuracy:.1f}%, expected at least 90%")


def value_checks():
    return [
        *[_check_rule(op) for op in RULES],
        Check(
            "topological_order lists every node once, each after all its parents",
            "topological_order",
            _order_check,
        ),
        Check(
            "topological_order works on a chain of 20,000 nodes (deeper than Python's "
            "recursion limit)",
            "topological_order",
            _deep_order,
        ),
        Check("a Value used twice gets the sum of both gradients", "backward", _used_twice),
        Check(
            "backward gives the engine's gradients on 8 random graphs (shared nodes, every op)",
            "backward",
            _random_graphs,
        ),
        Check(
            "backward works on a chain of 20,000 nodes, with the engine's gradient",
            "backward",
            _deep_backward,
        ),
        Check(
            "a second backward adds to the leaves' .grad; intermediates get this call's",
            "backward",
            _twice,
        ),
        Check(
            "a gradient passed on unchanged (by +) is never changed in place",
            "backward",
            _shared_gradient,
        ),
        Check(
            "your Value trains a small network on the two moons to at least 90%",
            "backward",
            _moons_check,
            time_limit=90.0,
            last=True,
        ),
    ]


def _rule_gives(module, op, arrays, grad_output):
    apply = RULES[op].apply
    out = apply(*[module.Value(a) for a in arrays])
    return gives(out.rule, grad_output)


def _rule_is(op, wrong):
    """A probe: the rule of `op` returns `wrong(arrays, g)` instead of the right one."""

    def probe(module):
        arrays = _operands(RULES[op].arity, 60)
        grad_output = random((3,), 61)
        got = _rule_gives(module, op, arrays, grad_output)
        expected = wrong(arrays, grad_output)
        return got is not None and all(matches(g, e) for g, e in zip(got, expected))

    return probe


def _recursion(function):
    def probe(module):
        _, y = _chain(module.Value, 2000)
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(1000)
        try:
            if function == "topological_order":
                module.topological_order(y)
            else:
                y.backward()
        except RecursionError:
            return True
        except Exception:  # another mistake: not this one
            return False
        finally:
            sys.setrecursionlimit(limit)
        return False

    return probe


def _repeats(module):
    _, root = _diamond(module.Value)
    order = gives(module.topological_order, root)
    return order is not None and len({id(n) for n in order}) < len(order)


def _children_first(module):
    _, root = _diamond(module.Value)
    order = gives(module.topological_order, root)
    return order is not None and len(order) > 1 and order[0] is root


def _overwrites(module):
    x = module.Value(3.0)
    if raises((x * x).backward) and x.grad is None:
        return False
    return matches(x.grad, 3.0)  # one use's share: the other was overwritten


def _in_place(module):
    x = module.Value(np.array([1.0, 2.0]))
    y = x + x
    if raises((y + y).backward) and x.grad is None:
        return False
    return matches(y.grad, [4.0, 4.0])  # y's share, 2, was doubled in place by x's


def _forward_order(module):
    """The student's walk gives the right gradients once the order it walks is reversed."""
    right = module.topological_order
    a = module.Value(0.5)
    b = module.Value(-1.5)
    loss = (a * b).tanh() * a
    module.topological_order = lambda root: list(reversed(right(root)))
    try:
        if raises(loss.backward):
            return False
    finally:
        module.topological_order = right
    _, (da, db) = engine_gradients(lambda x, y: (x * y).tanh() * x, [0.5, -1.5], 1.0)
    return matches(a.grad, da) and matches(b.grad, db)


def _intermediates_add_up(module):
    x = module.Value(np.array([0.5, -1.0]))
    hidden = x * x
    loss = hidden.tanh()
    if raises(loss.backward):
        return False
    first = np.array(hidden.grad)
    if raises(loss.backward):
        return False
    return matches(hidden.grad, 2 * first)


def value_diagnoses():
    return _rule_diagnoses() + _walk_diagnoses()


def _rule_diagnoses():
    """The mistakes of the six rules."""
    return [
        Diagnosis(
            "__add__",
            "a + b passes g to *both* operands: the rule is (g, g)",
            _rule_is("__add__", lambda arrays, g: (g, np.zeros_like(g))),
        ),
        Diagnosis(
            "__mul__",
            "each operand of a * b gets g times the *other* operand: (g * b, g * a), "
            "not (g * a, g * b)",
            _rule_is("__mul__", lambda arrays, g: (g * arrays[0], g * arrays[1])),
        ),
        Diagnosis(
            "__pow__",
            "the exponent drops by one: d(a ** n) = n * a ** (n - 1), not n * a ** n",
            _rule_is("__pow__", lambda arrays, g: (g * 3 * arrays[0] ** 3,)),
        ),
        Diagnosis(
            "__pow__",
            "multiply by the exponent: d(a ** n) = n * a ** (n - 1)",
            _rule_is("__pow__", lambda arrays, g: (g * arrays[0] ** 2,)),
        ),
        Diagnosis(
            "tanh",
            "tanh' = 1 - tanh(a)²: square the output (out), not the input a",
            _rule_is("tanh", lambda arrays, g: (g * (1 - arrays[0] ** 2),)),
        ),
        Diagnosis(
            "exp",
            "exp' = exp: the rule is g * out (the output), not g * a",
            _rule_is("exp", lambda arrays, g: (g * arrays[0],)),
        ),
        Diagnosis(
            "log",
            "log' = 1 / a: the rule is g / a, not g * a",
            _rule_is("log", lambda arrays, g: (g * arrays[0],)),
        ),
    ]


def _walk_diagnoses():
    """The mistakes of topological_order and backward."""
    return [
        Diagnosis(
            "topological_order",
            "the order recurses: a chain of 2,000 nodes passes Python's recursion limit; "
            "keep your own stack of (node, parents done) pairs instead",
            _recursion("topological_order"),
        ),
        Diagnosis(
            "topological_order",
            "a node reached by two paths is listed twice: remember the nodes you have "
            "visited (a set of their ids) and skip them",
            _repeats,
        ),
        Diagnosis(
            "topological_order",
            "the root comes first: list a node only after all its parents (append it when "
            "you come back to it, post-order), so the root is last",
            _children_first,
        ),
        Diagnosis(
            "backward",
            "backward recurses (or its order does): a chain of 2,000 nodes passes Python's "
            "recursion limit; walk a list in a loop",
            _recursion("backward"),
        ),
        Diagnosis(
            "backward",
            "a Value used twice must get the sum of both shares: you overwrite the first "
            "share with the second; add to what is there",
            _overwrites,
        ),
        Diagnosis(
            "backward",
            "you add into a gradient array in place (+=): an Add hands the same array to "
            "both parents, so that changes the other's too; write total = total + g",
            _in_place,
        ),
        Diagnosis(
            "backward",
            "the walk goes oldest first: walk reversed(topological_order(self)), newest "
            "first, so a node has all its gradient before its rule runs",
            _forward_order,
        ),
        Diagnosis(
            "backward",
            "an intermediate's .grad adds up over backward() calls: set it to this call's "
            "gradient (only leaves add up, as in PyTorch)",
            _intermediates_add_up,
        ),
        Diagnosis(
            "backward",
            "a leaf's .grad is replaced by each backward(): add this call's gradient to it "
            "(as PyTorch does; zero it yourself between steps)",
            _leaf_replaced,
        ),
    ]


def _leaf_replaced(module):
    x = module.Value(2.0)
    loss = x * 3.0
    if raises(loss.backward) or raises(loss.backward):
        return False
    return matches(x.grad, 3.0)


# ---------------------------------------------------------------------- unbroadcast.py

UNBROADCAST_CASES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 3), (2, 1)), ((4, 2, 3), (1, 3))]


def _unbroadcast_check(grad_shape, shape):
    def run(module):
        grad = random(grad_shape, 70)
        kept = grad.copy()
        got = module.unbroadcast(grad, shape)
        if not np.array_equal(grad, kept):
            raise MismatchError("unbroadcast wrote into grad")
        expected = tg.Tensor(np.zeros(shape), requires_grad=True)
        (expected * tg.Tensor(np.ones(grad_shape))).backward(tg.Tensor(kept))
        close(got, expected.grad.numpy(), f"{grad_shape} -> {shape}")

    return run


def _mul_check(shape_a, shape_b):
    def run(module):
        a, b = random(shape_a, 71), random(shape_b, 72)
        grad_output = random(np.broadcast_shapes(shape_a, shape_b), 73)
        got = module.mul_backward(a, b, grad_output)
        _, expected = engine_gradients(lambda x, y: x * y, [a, b], grad_output)
        if not isinstance(got, tuple) or len(got) != 2:
            raise MismatchError("mul_backward must return (da, db)")
        close(got[0], expected[0], "da")
        close(got[1], expected[1], "db")

    return run


def unbroadcast_checks():
    return [
        *[
            Check(
                f"unbroadcast sums a {g} gradient back to {s}, as the engine does",
                "unbroadcast",
                _unbroadcast_check(g, s),
            )
            for g, s in UNBROADCAST_CASES
        ],
        Check(
            "unbroadcast sums a (2, 3) gradient back to a scalar ()",
            "unbroadcast",
            _unbroadcast_check((2, 3), ()),
        ),
        *[
            Check(
                f"mul_backward of {a} * {b}: da and db equal the engine's, in their shapes",
                "mul_backward",
                _mul_check(a, b),
            )
            for a, b in [((3,), (2, 3)), ((2, 1), (1, 3)), ((), (2, 2))]
        ],
    ]


def _unbroadcast_gives(module, grad_shape, shape):
    return gives(module.unbroadcast, np.ones(grad_shape), shape)


def unbroadcast_diagnoses():
    return [
        Diagnosis(
            "unbroadcast",
            "a sum, not a mean: every copy's gradient counts in full",
            lambda m: (
                matches(_unbroadcast_gives(m, (2, 3), (3,)), np.ones(3))
                or matches(_unbroadcast_gives(m, (2, 3), (2, 1)), np.ones((2, 1)))
            ),
        ),
        Diagnosis(
            "unbroadcast",
            "keep the size-1 dims: sum them with keepdims=True, so (2, 3) -> (2, 1), not (2,)",
            lambda m: np.shape(_unbroadcast_gives(m, (2, 3), (2, 1))) == (2,),
        ),
        Diagnosis(
            "unbroadcast",
            "first sum away the leading dims broadcasting added (grad.ndim - len(shape) of "
            "them): (2, 3) -> (3,) sums axis 0",
            lambda m: np.shape(_unbroadcast_gives(m, (2, 3), (3,))) in ((2, 3), (1, 3)),
        ),
        Diagnosis(
            "mul_backward",
            "each operand gets g times the *other*: da = g * b, db = g * a",
            lambda m: matches(
                gives(m.mul_backward, np.full(3, 2.0), np.full(3, 5.0), np.ones(3)),
                (np.full(3, 2.0), np.full(3, 5.0)),
            ),
        ),
        Diagnosis(
            "mul_backward",
            "each gradient must have its operand's shape: unbroadcast(g * b, a.shape) and "
            "unbroadcast(g * a, b.shape)",
            lambda m: (
                _shapes_of(gives(m.mul_backward, np.ones(3), np.ones((2, 3)), np.ones((2, 3))))
                == [(2, 3), (2, 3)]
            ),
        ),
    ]


def _shapes_of(grads):
    return None if grads is None else [np.shape(g) for g in grads]


# ----------------------------------------------------------------------------- tape.py


def _record(module, program, arrays):
    """Run `program` on numpy arrays, recording a tape of the module's Steps; returns
    (tape, loss id, values by id)."""
    values, tape = dict(enumerate(arrays)), []

    def add(output, inputs, rule):
        values[len(values)] = output
        tape.append(module.Step(len(values) - 1, tuple(inputs), rule))
        return len(values) - 1

    def mul(i, j):
        a, b = values[i], values[j]
        return add(a * b, (i, j), lambda g: (g * b, g * a))

    def plus(i, j):
        return add(values[i] + values[j], (i, j), lambda g: (g, g))  # g passed on as it is

    def tanh(i):
        out = np.tanh(values[i])
        return add(out, (i,), lambda g: (g * (1 - out * out),))

    for name, first, second in program:
        index = {"*": mul, "+": plus}.get(name)
        node = index(first, second) if index else tanh(first)
    return tape, node, values


def _tape_program(seed, steps, leaves):
    rng = np.random.default_rng(seed)
    return [
        (("*", "+", "tanh")[rng.integers(3)], *rng.integers(leaves + step, size=2).tolist())
        for step in range(steps)
    ]


def _engine_tape_gradients(program, arrays):
    tensors = [tg.Tensor(a, requires_grad=True) for a in arrays]
    nodes = list(tensors)
    for name, first, second in program:
        a, b = nodes[first], nodes[second]
        nodes.append(a * b if name == "*" else a + b if name == "+" else a.tanh())
    nodes[-1].backward(tg.Tensor(np.ones(nodes[-1].shape)))
    return [None if t.grad is None else t.grad.numpy() for t in tensors]


def _tape_check(seed, steps, leaves=2):
    def run(module):
        program = _tape_program(seed, steps, leaves)
        arrays = [random((2,), 80 + seed + i) * 0.7 for i in range(leaves)]
        tape, loss, _ = _record(module, program, arrays)
        grads = module.backward(tape, loss, np.ones(2))
        if not isinstance(grads, dict):
            raise MismatchError(f"backward returned a {type(grads).__name__}, not a dict")
        close(grads.get(loss), np.ones(2), "the loss's own gradient (the seed)")
        for leaf, expected in enumerate(_engine_tape_gradients(program, arrays)):
            if expected is None:
                if leaf in grads:
                    raise MismatchError(f"leaf {leaf} is not used, yet has a gradient")
                continue
            close(grads.get(leaf), expected, f"leaf {leaf}")

    return run


def _unreachable(module):
    arrays = [np.array([1.0, 2.0]), np.array([3.0, -1.0])]
    tape, _, _ = _record(module, [("*", 0, 1), ("tanh", 0, 0), ("+", 0, 1)], arrays)
    grads = module.backward(tape, 2, np.ones(2))  # the loss is node 2: a * b
    for node in (3, 4):
        if node in grads:
            raise MismatchError(f"node {node} comes after the loss, yet has a gradient")
    close(grads.get(0), arrays[1], "a of loss = a * b")


def _shared(module):
    arrays = [np.array([1.0, 2.0])]
    tape, loss, _ = _record(module, [("+", 0, 0), ("+", 1, 1)], arrays)
    grads = module.backward(tape, loss, np.ones(2))
    close(grads.get(0), [4.0, 4.0], "x of (x + x) + (x + x)")
    close(grads.get(1), [2.0, 2.0], "y = x + x of y + y")


def _long_tape(module):
    program = [("+" if i % 2 == 0 else "tanh", i, 0) for i in range(20000)]  # x + x0, tanh
    arrays = [np.array([0.3, -0.2])]
    tape, loss, _ = _record(module, program, arrays)
    grads = module.backward(tape, loss, np.ones(2))
    (expected,) = _engine_tape_gradients(program, arrays)
    close(grads.get(0), expected, "the leaf at the start", rtol=1e-9)


def tape_checks():
    return [
        Check(
            "a chain of 3 steps: the gradient reaches the first node",
            "backward",
            _tape_check(1, 3, 1),
        ),
        Check(
            "a node used by two steps gets the sum of both shares",
            "backward",
            _shared,
        ),
        Check(
            "a step the loss does not depend on gives no gradient to anything",
            "backward",
            _unreachable,
        ),
        *[
            Check(
                f"random tape {seed}: every leaf's gradient equals the engine's",
                "backward",
                _tape_check(seed, 12, 3),
            )
            for seed in range(3)
        ],
        Check(
            "a tape of 20,000 steps (no recursion), the engine's gradients",
            "backward",
            _long_tape,
        ),
    ]


def _tape_gives(module, program, arrays, loss=None):
    tape, last, _ = _record(module, program, arrays)
    return gives(module.backward, tape, last if loss is None else loss, np.ones(2))


def tape_diagnoses():
    one = [np.array([0.5, -1.0])]
    return [
        Diagnosis(
            "backward",
            "the walk goes oldest step first: walk reversed(tape), so a step's output has "
            "all its gradient before its rule runs",
            lambda m: (
                isinstance(got := _tape_gives(m, [("tanh", 0, 0), ("tanh", 1, 1)], one), dict)
                and 2 in got
                and 0 not in got
            ),
        ),
        Diagnosis(
            "backward",
            "a node used by two steps must get the sum of both shares: you overwrite the "
            "first share; add to what is there",
            lambda m: matches(
                (_tape_gives(m, [("*", 0, 0)], [np.array([3.0, 1.0])]) or {}).get(0), [3.0, 1.0]
            ),
        ),
        Diagnosis(
            "backward",
            "you add into a gradient array in place (+=): an addition's rule hands the same "
            "array to both inputs, so that changes both; write grads[n] = grads[n] + share",
            lambda m: matches(
                (_tape_gives(m, [("+", 0, 0), ("+", 1, 1)], [np.ones(2)]) or {}).get(1),
                [4.0, 4.0],
            ),
        ),
        Diagnosis(
            "backward",
            "skip a step whose output has no gradient (the loss does not depend on it) "
            "instead of looking its gradient up",
            lambda m: _raises_key_error(m),
        ),
    ]


def _raises_key_error(module):
    tape, _, _ = _record(module, [("*", 0, 0), ("tanh", 0, 0)], [np.ones(2)])
    try:
        module.backward(tape, 1, np.ones(2))
    except KeyError:
        return True
    except Exception:  # another mistake
        return False
    return False
