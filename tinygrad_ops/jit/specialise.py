"""What the capture fixed, folded into an inlined rule: a partial evaluation of its statements.

At every eager call an op's forward checks and decides things that, in a compiled program,
come out the same at every replay: the guards hold the arguments' shapes and dtypes fixed,
the options and constants are the capture's, `needs_input_grad` is the node's. This pass
works those out once, when the program is written, and leaves the rest of the rule as it is:

- a name the capture knows (an option, a constant, needs_input_grad) is its value;
- `x.shape`, `x.ndim`, `x.dtype`, `x.size`, `x.itemsize`, `np.ndim(x)`, `np.shape(x)`,
  `len(x)`, `type(x)`, `isinstance(x, np.ndarray)` of an array whose shape and dtype the
  guards fix are their values, and so is `x is None`; what numpy makes of such arrays (an
  operator on two of one dtype, a ufunc, `x.reshape(...)`, `x.astype(...)`, `x.view(...)`,
  `x.T`, `np.asarray(x)`, `x += y`) is such an array too, its shape and dtype worked out on
  arrays of zeros;
- arithmetic, comparisons, indexing, `and`/`or`/`not` and `a if c else b` of known values
  are computed, and so is a call of a builtin such as `len` or `max`, of a numpy dtype or
  shape function, or of a helper its module declares `@pure` (ops/checks.py), when every
  argument is a known immutable value (a `@pure` helper that hands back an array argument
  as it is, such as `as_matrix` of a 2-D array, is that argument);
- an `if` on a known value is its branch, a `with` of a context whose class declares it
  inert for the known arguments (`RowBuffers.inert`) is its body, and an assignment that
  nothing reads any more (`drop_dead`) is not written.

Nothing here reads an array's values: a result is computed only from immutable values
(numbers, strings, tuples, slices, dtypes), so the folded rule computes the same bits as
the rule itself. What the node keeps between its forward and its backward passes through
names of the program (`channel`, see inline.py), and what the forward's folding knows of
them, the backward's folding knows too.
"""

from __future__ import annotations

import ast
import math
import operator
import types
from typing import NamedTuple

import numpy as np

MISSING = object()  # (no value known)


class Fact(NamedTuple):
    """What the capture knows of a name: `expression`, what a load of it becomes (None:
    the name stays), its `value`, or an array's `shape` and `dtype` (fixed by the guards)."""

    expression: object = None
    value: object = MISSING
    shape: tuple | None = None
    dtype: object = None
    plain: bool = False  # (an array known to be an np.ndarray itself, not a subclass)


def clone(node):
    """A copy of an AST (its nodes new, the values they hold shared): copy.deepcopy's
    result, several times faster."""
    if isinstance(node, list):
        return [clone(item) for item in node]
    if not isinstance(node, ast.AST):
        return node
    copied = node.__class__.__new__(node.__class__)
    for name, value in node.__dict__.items():
        copied.__dict__[name] = clone(value) if isinstance(value, (ast.AST, list)) else value
    return copied


def array_fact(shape, dtype, plain) -> Fact:
    return Fact(shape=tuple(shape), dtype=np.dtype(dtype), plain=plain)


_FROZEN = (bool, int, float, complex, str, bytes, type(None), type(Ellipsis), np.dtype, np.generic)
_FROZEN += (type, range)


def frozen(value) -> bool:
    """Whether `value` is immutable (so a result computed from it holds at every replay)."""
    if isinstance(value, (tuple, frozenset)):
        return all(frozen(item) for item in value)
    if isinstance(value, slice):
        return frozen((value.start, value.stop, value.step))
    return isinstance(value, _FROZEN)


def _literal(value) -> bool:
    kind = type(value)
    if kind is tuple:
        return all(_literal(item) for item in value)
    if kind is float:
        return math.isfinite(value)
    return kind in (bool, int, str, bytes, type(None)) or value is Ellipsis


def constant(value, bind):
    """An expression for `value`: a literal, or a name bound in the generated function."""
    node = ast.Constant(value) if _literal(value) else ast.Name(bind(value), ast.Load())
    node.bound = True  # (inline.py renames no bound name)
    node.known = value
    return node


def known(node):
    """The value of an expression the pass worked out, or MISSING."""
    if isinstance(node, ast.Constant):
        return node.value
    return getattr(node, "known", MISSING)


def _known_frozen(node):
    value = known(node)
    return value if value is MISSING or frozen(value) else MISSING


_PURE = {len, max, min, abs, int, float, bool, tuple, isinstance, type, range, sum, all, any}
_PURE |= {np.ndim, np.shape, np.dtype, np.result_type, np.promote_types, np.can_cast}
_PURE |= {np.issubdtype, math.prod}


def _pure(function) -> bool:
    if isinstance(function, types.BuiltinMethodType):  # a method of a tuple, a str, a dtype
        owner = function.__self__
        if not isinstance(owner, types.ModuleType) and frozen(owner):
            return True
    try:
        return function in _PURE or getattr(function, "pure", False) is True
    except TypeError:  # (unhashable)
        return False


_ARRAY_ATTRIBUTES = {
    "shape": lambda fact: fact.shape,
    "ndim": lambda fact: len(fact.shape),
    "dtype": lambda fact: fact.dtype,
    "size": lambda fact: math.prod(fact.shape),
    "itemsize": lambda fact: fact.dtype.itemsize,
}
_ARRAY_FUNCTIONS = {
    np.ndim: lambda fact: len(fact.shape),
    np.shape: lambda fact: fact.shape,
    np.size: lambda fact: math.prod(fact.shape),
    type: lambda fact: np.ndarray if fact.plain else MISSING,
    len: lambda fact: fact.shape[0] if fact.shape else MISSING,
}
_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.MatMult: operator.matmul,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
_COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


def _array_of(node):
    return getattr(node, "array", None)


class Specialise:
    """The partial evaluation of one rule's statements (see the module docstring).

    `facts` maps names (and "self.<attribute>" for the node's attributes) to what is known
    of them; `inputs` are the facts of `self.inputs[k]` (the forward's operands); `bind`
    puts a value in the generated function's namespace and returns its name; `aliases`
    are names a load may be replaced by themselves (the program's names for what the
    node keeps: nothing in the backward assigns them)."""

    def __init__(self, facts, bind, inputs=(), aliases=()):
        self.facts = dict(facts)
        self.bind = bind
        self.inputs = inputs
        self.aliases = frozenset(aliases)

    # -- statements ------------------------------------------------------------------------

    def block(self, statements) -> list:
        result = []
        for statement in statements:
            result.extend(self.statement(statement))
        return result

    def statement(self, node) -> list:
        kind = type(node)
        if kind is ast.Assign:
            node.value = self.expression(node.value)
            fact = self.fact_from(node.value)
            for target in node.targets:
                self.store(target, node.value, fact)
            return [node]
        if kind is ast.Expr:
            node.value = self.expression(node.value)
            return [] if known(node.value) is not MISSING else [node]
        if kind is ast.If:
            return self.branch(node)
        if kind is ast.AugAssign:
            node.value = self.expression(node.value)
            fact = self.facts.get(getattr(node.target, "id", None))
            if fact is None or not fact.shape or fact.expression is not None:
                self.store(node.target, None, None)  # (an array's stays: in place)
            return [node]
        if kind is ast.With:
            for item in node.items:
                item.context_expr = self.expression(item.context_expr)
                if item.optional_vars is not None:
                    self.store(item.optional_vars, None, None)
            if all(self.inert(item) for item in node.items):
                return self.block(node.body)
            node.body = self.block(node.body) or [ast.Pass()]
            return [node]
        if kind in (ast.Raise, ast.Assert, ast.Delete, ast.Pass, ast.Break, ast.Continue):
            for name in _stored_names(node):
                self.facts.pop(name, None)
            self.children(node)
            return [node]
        if kind in (ast.For, ast.While, ast.Try):
            return [self.opaque(node)]
        self.facts = {}  # (another statement, a `match`: nothing known after it, nothing folded)
        return [node]

    def inert(self, item) -> bool:
        """Whether a `with` item makes a context that changes nothing for these arguments,
        as its class declares (`inert`, a `@pure` test of the same arguments): then the
        block is its body alone."""
        call = item.context_expr
        test = getattr(known(call.func), "inert", None) if isinstance(call, ast.Call) else None
        if item.optional_vars is not None or test is None or not _pure(test):
            return False
        arguments = [_known_frozen(argument) for argument in call.args]
        keywords = {keyword.arg: _known_frozen(keyword.value) for keyword in call.keywords}
        if None in keywords or any(value is MISSING for value in [*arguments, *keywords.values()]):
            return False
        return known(self.computed(lambda: test(*arguments, **keywords), call)) is True

    def branch(self, node) -> list:
        node.test = self.expression(node.test)
        test = _known_frozen(node.test)
        if test is not MISSING:
            return self.block(node.body if test else node.orelse)
        before = dict(self.facts)
        node.body = self.block(node.body) or [ast.Pass()]
        after_body, self.facts = self.facts, before
        node.orelse = self.block(node.orelse)
        self.facts = {
            name: fact for name, fact in self.facts.items() if after_body.get(name) is fact
        }
        return [node]

    def opaque(self, node):
        """A loop or a `try`: what it assigns is not known inside or after it; the rest is
        folded inside as anywhere."""
        stored = _stored_names(node)
        for name in stored:
            self.facts.pop(name, None)
        before = dict(self.facts)
        for field in ("body", "orelse", "finalbody"):
            if getattr(node, field, None):
                self.facts = dict(before)
                setattr(node, field, self.block(getattr(node, field)) or [ast.Pass()])
        for handler in getattr(node, "handlers", ()):
            self.facts = dict(before)
            handler.body = self.block(handler.body) or [ast.Pass()]
        self.facts = before
        for field in ("iter", "test"):
            if getattr(node, field, None) is not None:
                setattr(node, field, self.expression(getattr(node, field)))
        return node

    def store(self, target, value, fact):
        """`target` is assigned `value` (an expression, or None when not known) of `fact`."""
        if isinstance(target, ast.Name):
            self._set(target.id, fact)
        elif is_self_attribute(target):
            self._set("self." + target.attr, fact)
        elif isinstance(target, (ast.Tuple, ast.List)):
            parts = [None] * len(target.elts)
            whole = _known_frozen(value) if value is not None else MISSING
            if isinstance(whole, tuple) and len(whole) == len(parts):
                parts = [Fact(constant(item, self.bind), item) for item in whole]
            elif isinstance(value, ast.Tuple) and len(value.elts) == len(parts):
                parts = [self.fact_from(element) for element in value.elts]
            for element, part in zip(target.elts, parts):
                self.store(element, None, part)
        elif isinstance(target, ast.Starred):
            self.store(target.value, None, None)
        else:  # a subscript or another object's attribute: its parts are loads
            self.children(target)

    def _set(self, name, fact):
        if fact is None:
            self.facts.pop(name, None)
        else:
            self.facts[name] = fact

    def fact_from(self, node):
        """What an assignment of the expression `node` makes known of its target."""
        value = known(node)
        array = _array_of(node)
        if value is MISSING and array is None:
            if isinstance(node, ast.Name) and node.id in self.aliases:
                return Fact(node)
            return None
        expression = (
            node if isinstance(node, ast.Constant) or getattr(node, "bound", False) else None
        )
        if expression is None and isinstance(node, ast.Name) and node.id in self.aliases:
            expression = node
        if array is None:
            return Fact(expression, value)
        return Fact(expression, value, array.shape, array.dtype, array.plain)

    # -- expressions -----------------------------------------------------------------------

    def children(self, node):
        """Fold the expressions inside `node` (a keyword argument's value too)."""
        for field, old in ast.iter_fields(node):
            if isinstance(old, ast.expr):
                setattr(node, field, self.expression(old))
            elif isinstance(old, ast.keyword):
                self.children(old)
            elif isinstance(old, list):
                for position, item in enumerate(old):
                    if isinstance(item, ast.expr):
                        old[position] = self.expression(item)
                    elif isinstance(item, ast.keyword):
                        self.children(item)

    def expression(self, node):
        method = getattr(self, "_" + type(node).__name__.lower(), None)
        if method is None:
            self.children(node)
            return node
        return method(node)

    def _load(self, node, fact):
        if fact is None:
            return node
        result = clone(fact.expression) if fact.expression is not None else node
        if fact.value is not MISSING:
            result.known = fact.value
        if fact.shape is not None:
            result.array = fact
        return result

    def _name(self, node):
        if not isinstance(node.ctx, ast.Load):
            return node
        return self._load(node, self.facts.get(node.id))

    def _attribute(self, node):
        if not isinstance(node.ctx, ast.Load):
            node.value = self.expression(node.value)
            return node
        if is_self_attribute(node):
            return self._load(node, self.facts.get("self." + node.attr))
        node.value = self.expression(node.value)
        array = _array_of(node.value)
        if array is not None and node.attr in _ARRAY_ATTRIBUTES:
            return constant(_ARRAY_ATTRIBUTES[node.attr](array), self.bind)
        if array is not None and node.attr == "T":
            node.array = array._replace(shape=array.shape[::-1])
            return node
        owner = known(node.value)
        if isinstance(owner, types.ModuleType):
            value = getattr(owner, node.attr, MISSING)
            return node if value is MISSING else constant(value, self.bind)
        if owner is not MISSING and frozen(owner):
            value = getattr(owner, node.attr, MISSING)
            if value is not MISSING and (frozen(value) or _pure(value)):
                return constant(value, self.bind)
        return node

    def _subscript(self, node):
        if (
            isinstance(node.ctx, ast.Load)
            and is_self_attribute(node.value)
            and node.value.attr == "inputs"
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, int)
            and 0 <= node.slice.value < len(self.inputs)
        ):
            return self._load(node, self.inputs[node.slice.value])  # (an operand's fact)
        self.children(node)
        value = _known_frozen(node.value)
        index = self.index(node.slice)
        if value is not MISSING and index is not MISSING and isinstance(node.ctx, ast.Load):
            return self.computed(lambda: value[index], node)
        return node

    def index(self, node):
        if isinstance(node, ast.Slice):
            bounds = (node.lower, node.upper, node.step)
            parts = [None if part is None else _known_frozen(part) for part in bounds]
            return MISSING if any(part is MISSING for part in parts) else slice(*parts)
        if isinstance(node, ast.Tuple):
            items = [self.index(element) for element in node.elts]
            return MISSING if any(item is MISSING for item in items) else tuple(items)
        return _known_frozen(node)

    def computed(self, compute, node, given=()):
        """`compute()` as a constant if it runs and gives an immutable value, else `node`;
        or, where it hands back as it is an array of `given` ((expression, value) pairs:
        a call's arguments), that argument's expression."""
        try:
            value = compute()
        except Exception:  # (the replay raises what the rule raises)
            return node
        for argument, passed in given:
            if value is passed and _array_of(argument) is not None:
                return argument  # (a helper that hands back an array it was given as it is)
        return constant(value, self.bind) if frozen(value) else node

    def _tuple(self, node):
        self.children(node)
        if isinstance(node.ctx, ast.Load):
            items = [_known_frozen(element) for element in node.elts]
            if not any(item is MISSING for item in items):
                return constant(tuple(items), self.bind)
        return node

    def _binop(self, node):
        self.children(node)
        left, right = _known_frozen(node.left), _known_frozen(node.right)
        function = _BINARY.get(type(node.op))
        if function is not None and left is not MISSING and right is not MISSING:
            return self.computed(lambda: function(left, right), node)
        if isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            left, right = node.left, node.right
            node.left, node.right = self.cast(left, right), self.cast(right, left)
        facts = [_array_of(node.left), _array_of(node.right)]
        if function is not None and None not in facts and facts[0].dtype == facts[1].dtype:
            result, _ = _on_zeros(function, [node.left, node.right], {})
            if isinstance(result, (np.ndarray, np.generic)):  # (its shape, as numpy finds it)
                plain = facts[0].plain and facts[1].plain and isinstance(result, np.ndarray)
                node.array = array_fact(np.shape(result), result.dtype, plain)
        return node

    def cast(self, number, other):
        """A Python number beside a float array (`other`, at least 1-d) of a `+ - * /` as a
        0-d array of the array's dtype: numpy casts it so at every call (the same bits;
        measured 0.3 us of a 0.5 us product at 4x4), unless the cast overflows or
        underflows."""
        value, fact = known(number), _array_of(other)
        if type(value) not in (int, float) or fact is None or fact.dtype.kind != "f":
            return number
        if not fact.shape:  # (0-d: maybe a numpy scalar, which numpy 1 promotes otherwise)
            return number
        if type(value) is int and abs(value) >= 2**53:  # (beyond a float's exact integers)
            return number
        with np.errstate(all="ignore"):
            cast = np.asarray(value, fact.dtype)
        if math.isfinite(value) != bool(np.isfinite(cast)) or (value == 0) != (cast == 0):
            return number
        number = constant(cast, self.bind)
        number.array = array_fact((), fact.dtype, True)
        return number

    def _unaryop(self, node):
        self.children(node)
        operand = _known_frozen(node.operand)
        if operand is MISSING or type(node.op) not in _UNARY:
            return node
        return self.computed(lambda: _UNARY[type(node.op)](operand), node)

    def _compare(self, node):
        """Computed as Python would (the value of the first false link, else of the last)."""
        self.children(node)
        left = self.operand(node.left)
        result = MISSING
        for op, right_node in zip(node.ops, node.comparators):
            right = self.operand(right_node)
            if left is MISSING or right is MISSING:
                return node
            if isinstance(op, (ast.Is, ast.IsNot)):
                if isinstance(left, _ArrayValue) and isinstance(right, _ArrayValue):
                    return node  # (two arrays: maybe the same one)
                result = (left is right) == isinstance(op, ast.Is)
            elif frozen(left) and frozen(right) and type(op) in _COMPARE:
                try:
                    result = _COMPARE[type(op)](left, right)
                except Exception:  # (the replay raises what the rule raises)
                    return node
                if not frozen(result):
                    return node
            else:
                return node
            if not result:
                break
            left = right
        return constant(result, self.bind)

    def operand(self, node):
        """A comparison's operand: a known value (any, for `is`), an array (never None)."""
        value = known(node)
        if value is not MISSING and (frozen(value) or not isinstance(value, np.ndarray)):
            return value
        return _ArrayValue() if _array_of(node) is not None else MISSING

    def _boolop(self, node):
        """Known values that do not decide are dropped (`True and x` is x); one that does
        ends the expression (`x or True`), as Python would evaluate it."""
        is_and = isinstance(node.op, ast.And)
        kept = []
        for position, item in enumerate(node.values):
            item = self.expression(item)
            value = _known_frozen(item)
            if value is MISSING:
                kept.append(item)
            elif bool(value) != is_and or position == len(node.values) - 1:
                kept.append(item)
                break
        if len(kept) == 1:
            return kept[0]
        node.values = kept
        return node

    def _ifexp(self, node):
        node.test = self.expression(node.test)
        test = _known_frozen(node.test)
        if test is not MISSING:
            return self.expression(node.body if test else node.orelse)
        node.body = self.expression(node.body)
        node.orelse = self.expression(node.orelse)
        return node

    def _namedexpr(self, node):
        node.value = self.expression(node.value)
        self.facts.pop(node.target.id, None)
        return node

    def shaped(self, node):
        """A call whose result's shape and dtype follow from its arguments' (an array
        method such as `x.reshape(-1)`, np.asarray, a ufunc of arrays of one dtype): the
        call, known as an array of those, or the argument it hands back as it is; None for
        another call."""
        func, arguments = node.func, list(node.args)
        if isinstance(func, ast.Attribute) and func.attr in _SHAPED_METHODS:
            function, arguments = getattr(np.ndarray, func.attr), [func.value, *arguments]
        else:
            function = known(func)
            if function is not np.asarray and not isinstance(function, np.ufunc):
                return None
        facts = [_array_of(argument) for argument in arguments]
        if facts[0] is None or len({fact.dtype for fact in facts if fact is not None}) > 1:
            return None
        keywords = {keyword.arg: keyword.value for keyword in node.keywords}
        result, first = _on_zeros(function, arguments, keywords)
        if result is first and (facts[0].plain or function is not np.asarray):
            return arguments[0]
        if not isinstance(result, (np.ndarray, np.generic)):
            return None
        plain = (facts[0].plain or function is np.asarray) and isinstance(result, np.ndarray)
        node.array = array_fact(np.shape(result), result.dtype, plain)
        return node

    def _call(self, node):
        passed_self = any(_is_self(argument) for argument in node.args) or any(
            _is_self(keyword.value) for keyword in node.keywords
        )
        self.children(node)
        shaped = self.shaped(node)
        if shaped is not None:
            return shaped
        function = known(node.func)
        if passed_self and not (function is not MISSING and _pure(function)):
            for name in [name for name in self.facts if name.startswith("self.")]:
                if name != "self.needs_input_grad":  # (a helper given the node may set these)
                    del self.facts[name]
        if function is MISSING or any(isinstance(argument, ast.Starred) for argument in node.args):
            return node
        if node.args and not node.keywords and len(node.args) <= 2:
            array = _array_of(node.args[0])
            if array is not None:
                if function is isinstance and known(node.args[-1]) is np.ndarray:
                    return constant(True, self.bind)
                special = _ARRAY_FUNCTIONS.get(function) if len(node.args) == 1 else None
                if special is not None:
                    value = special(array)
                    return node if value is MISSING else constant(value, self.bind)
        if not _pure(function):
            return node
        declared = getattr(function, "pure", False) is True  # (an op's helper: arrays may come)
        arguments = [_argument(argument, declared) for argument in node.args]
        keywords = {keyword.arg: _argument(keyword.value, declared) for keyword in node.keywords}
        values = [*arguments, *keywords.values()]
        if any(value is MISSING for value in values) or None in keywords:
            return node
        given = zip(node.args, arguments)
        return self.computed(lambda: function(*arguments, **keywords), node, given)


_SHAPED_METHODS = frozenset({"reshape", "view", "astype", "swapaxes", "transpose"})


def _on_zeros(function, arguments, keywords):
    """(`function` of the argument expressions, their arrays as arrays of zeros of their
    shapes and dtypes, or MISSING; the first argument's stand-in). At most 65,536
    elements an array: it computes."""
    values = [_argument(argument, True) for argument in arguments]
    given = {name: _known_frozen(value) for name, value in keywords.items()}
    everything = [*values, *given.values()]
    if any(value is MISSING or (np.ndim(value) and np.size(value) > 65536) for value in everything):
        return MISSING, None
    if None in given or "out" in given:
        return MISSING, None
    try:
        with np.errstate(all="ignore"):
            return function(*values, **given), values[0]
    except Exception:  # (the replay raises what numpy raises)
        return MISSING, None


def _argument(node, arrays):
    """A call's argument as the folding knows it: an immutable value, or (`arrays`) for an
    array whose shape and dtype are fixed an array of those that reads as zeros."""
    value = _known_frozen(node)
    fact = _array_of(node)
    if value is MISSING and arrays and fact is not None:
        return np.broadcast_to(np.zeros((), fact.dtype), fact.shape)
    return value


class _ArrayValue:
    """An array in a comparison: never None, never identical to a known value."""


def _is_self(node) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def passes_self(statements) -> bool:
    """Whether the node itself (not one of its attributes) is used: given to a helper, which
    may read or set its attributes."""
    names = attributes = 0
    for statement in statements:
        for node in ast.walk(statement):
            names += _is_self(node)
            attributes += is_self_attribute(node)
    return names != attributes


def is_self_attribute(node) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _stored_names(node) -> set:
    names = set()
    for part in ast.walk(node):
        if isinstance(part, ast.Name) and isinstance(part.ctx, (ast.Store, ast.Del)):
            names.add(part.id)
        elif is_self_attribute(part) and isinstance(part.ctx, (ast.Store, ast.Del)):
            names.add("self." + part.attr)
    return names


# -- assignments nothing reads -------------------------------------------------------------

_PURE_NODES = (ast.Constant, ast.Name, ast.Tuple, ast.Attribute, ast.Subscript, ast.Slice)
_PURE_NODES += (ast.expr_context,)


def drop_dead(bodies, live=(), shared="__") -> list:
    """`bodies` (lists of statements) without the assignments of plain values (names,
    constants, tuples, attributes, indexing) to names nothing loads. Each body's names
    are its own, but those starting with `shared` (the program's, which the bodies pass
    between them) and the `live` ones (loaded by what follows)."""
    while True:
        loads = [loaded_names(statements) for statements in bodies]
        passed = {name for names in loads for name in names if name.startswith(shared)}
        swept = [
            _sweep(statements, names | passed | set(live))
            for statements, names in zip(bodies, loads)
        ]
        if all(len(_flat(a)) == len(_flat(b)) for a, b in zip(swept, bodies)):
            return swept
        bodies = swept


def loaded_names(statements) -> set:
    """The names that `statements` read."""
    return {
        node.id
        for statement in statements
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }


def _flat(statements) -> list:
    return [node for statement in statements for node in ast.walk(statement)]


def _sweep(statements, loads, top=True) -> list:
    result = []
    for position, statement in enumerate(statements):
        if isinstance(statement, ast.Assign):
            rest = statements[position + 1 :] if top else None
            statement = _live_part(statement, loads, rest)
            if statement is None:
                continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if inner:
                setattr(statement, field, _sweep(inner, loads, False) or [ast.Pass()])
        empty = isinstance(statement, ast.If) and _empty(statement.body + statement.orelse)
        if empty and _plain(statement.test):
            continue
        result.append(statement)
    return result


def _plain(node) -> bool:
    return all(isinstance(part, _PURE_NODES) for part in ast.walk(node))


def _live_part(statement, loads, rest):
    """The assignment without its targets that nothing loads, or that the rest of the
    block (`rest`, at the top level; None inside a branch) assigns again before anything
    loads them (None if no target is left)."""
    if not _plain(statement.value):
        return statement

    def dead(target):
        if not isinstance(target, ast.Name):
            return False
        return target.id not in loads or (rest is not None and overwritten(target.id, rest))

    targets = statement.targets
    value = statement.value
    if isinstance(value, ast.Constant) and isinstance(value.value, tuple):
        value = ast.Tuple([ast.Constant(item) for item in value.value], ast.Load())
    if len(targets) == 1 and isinstance(targets[0], ast.Tuple):
        elements = targets[0].elts
        if isinstance(value, ast.Tuple) and len(value.elts) == len(elements):
            pairs = [(t, v) for t, v in zip(elements, value.elts) if not dead(t)]
            if not pairs:
                return None
            if len(pairs) == 1:
                return ast.Assign([pairs[0][0]], pairs[0][1], lineno=0)
            targets = [ast.Tuple([t for t, _ in pairs], ast.Store())]
            return ast.Assign(targets, ast.Tuple([v for _, v in pairs], ast.Load()), lineno=0)
    kept = [target for target in targets if not dead(target)]
    if not kept:
        return None
    statement.targets = kept
    return statement


def overwritten(name, rest) -> bool:
    """Whether the statements `rest` assign `name` at their top level before any load."""
    for statement in rest:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
                return False
        if isinstance(statement, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == name for target in statement.targets
        ):
            return True
    return False


def _empty(statements) -> bool:
    return all(isinstance(statement, ast.Pass) for statement in statements)
