"""Inlined rules: an op's own `forward` and `backward`, written into the replay's lines.

A generic kernel calls the op's methods: `forward` keeps what `backward` needs on the
node (`save_for_backward`), `backward` reads it back, and each call costs Python's call
overhead. For a step of small arrays that overhead is most of the time. So the replay
writes the methods' bodies themselves into the generated function, taken from their
source (`inspect`, `ast`): the same statements, numpy call for numpy call, so the same
bits. There is no second statement of any rule: change `Tanh.backward` and the replay
inlines the new body.

What is rewritten, and only this: the method's parameters and locals get names of their
own (`i7_out`), its globals are bound in the generated function's namespace, `self` is the
node, `self.save_for_backward(...)` and `self.saved_tensors` become one local of the
program (the saved values pass from the forward to the backward without the node), a
`try` whose handlers only raise becomes its body (the guards fixed the shapes the eager
capture checked), and each `return` in tail position assigns the result. A method that
does anything else (calls one of its own methods, has a return elsewhere, a nested
function) is not inlined: its kernel calls it, as before.
"""

from __future__ import annotations

import ast
import builtins
import copy
import functools
import inspect
import textwrap
import types
from typing import NamedTuple

RESULT = "_result_"  # the name a tail `return` assigns (replaced by the output's)
_SAVED = ("saved_tensors", "saved")


class Body(NamedTuple):
    """A method made ready to inline: its parameters (without self) and their defaults,
    its statements (tail returns assigning RESULT), its locals and its globals."""

    parameters: tuple
    defaults: dict
    statements: list
    local_names: frozenset
    global_values: dict


@functools.lru_cache(maxsize=512)
def body_of(function) -> Body | None:
    """The inlinable body of the method `function`, or None where it cannot be inlined."""
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return None
    tree = ast.parse(source).body[0]
    arguments = tree.args
    if arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.posonlyargs:
        return None
    names = [argument.arg for argument in arguments.args]
    if not names or names[0] != "self" or tree.decorator_list:
        return None
    defaults = {}
    for name, default in zip(names[len(names) - len(arguments.defaults) :], arguments.defaults):
        try:
            defaults[name] = ast.literal_eval(default)
        except ValueError:
            return None
    statements = tree.body
    if isinstance(statements[0], ast.Expr) and isinstance(statements[0].value, ast.Constant):
        statements = statements[1:]  # (the docstring)
    statements = _tail(statements)
    if statements is None or not _simple(statements):
        return None
    stored = {node.id for stmt in statements for node in ast.walk(stmt) if _stored(node)}
    local_names = frozenset(stored | set(names[1:]) | {RESULT}) - {"self"}
    loaded = {
        node.id
        for stmt in statements
        for node in ast.walk(stmt)
        if isinstance(node, ast.Name) and node.id not in local_names and node.id != "self"
    }
    global_values = {}
    for name in loaded:
        if name in function.__globals__:
            global_values[name] = function.__globals__[name]
        elif hasattr(builtins, name) and name != "super":
            global_values[name] = getattr(builtins, name)
        else:
            return None
    return Body(tuple(names[1:]), defaults, statements, local_names, global_values)


def _stored(node) -> bool:
    return isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del))


def _tail(statements):
    """The statements with every return in tail position made `RESULT = value`; a `try`
    whose handlers only raise becomes its body; None if a return is left elsewhere."""
    result = []
    for position, statement in enumerate(statements):
        rest = statements[position + 1 :]
        if isinstance(statement, ast.Return):
            value = statement.value or ast.Constant(None)
            result.append(ast.Assign([ast.Name(RESULT, ast.Store())], value, lineno=0))
            return result
        if isinstance(statement, ast.If) and _constant(statement.test) is not None:
            taken = statement.body if _constant(statement.test) else statement.orelse
            return _tail(result + taken + rest)
        if isinstance(statement, ast.With) and _returns(statement.body) and not rest:
            body = _tail(statement.body)
            return None if body is None else [*result, ast.With(statement.items, body)]
        if isinstance(statement, ast.Try) and _only_raises(statement):
            tail = _tail(statement.body + rest)
            return None if tail is None else result + tail
        if isinstance(statement, ast.If) and _returns(statement.body):
            body = _tail(statement.body)
            orelse = _tail(statement.orelse + rest)
            if body is None or orelse is None:
                return None
            result.append(ast.If(statement.test, body, orelse))
            return result
        if any(isinstance(node, ast.Return) for node in ast.walk(statement)):
            return None
        result.append(statement)
    return None  # (no return at the end: not a rule that returns its result)


def _constant(test):
    """The value of an `if` test the replay knows (`self.graph_mode is not False`: a
    replay never records its backward), else None."""
    if (
        isinstance(test, ast.Compare)
        and _is_self_attribute(test.left)
        and test.left.attr == "graph_mode"
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is False
    ):
        return isinstance(test.ops[0], ast.Is)
    return None


def _only_raises(statement) -> bool:
    return (
        not statement.orelse
        and not statement.finalbody
        and all(isinstance(handler.body[-1], ast.Raise) for handler in statement.handlers)
    )


def _returns(statements) -> bool:
    return bool(statements) and isinstance(statements[-1], ast.Return)


def _simple(statements) -> bool:
    """No nested scope, no generator, no call of one of the node's own methods."""
    saves = {
        id(node.value)
        for statement in statements
        for node in ast.walk(statement)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and _is_self_attribute(node.value.func)
        and node.value.func.attr == "save_for_backward"
    }
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(
                node,
                (
                    ast.FunctionDef,
                    ast.AsyncFunctionDef,
                    ast.Lambda,
                    ast.ClassDef,
                    ast.Yield,
                    ast.YieldFrom,
                    ast.Await,
                    ast.Global,
                    ast.Nonlocal,
                    ast.ListComp,
                    ast.SetComp,
                    ast.DictComp,
                    ast.GeneratorExp,
                    ast.Return,
                ),
            ):
                return False
            own_call = isinstance(node, ast.Call) and _is_self_attribute(node.func)
            if own_call and id(node) not in saves:
                return False
    return True


def _is_self_attribute(node) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


class _Rewrite(ast.NodeTransformer):
    """Renames for one inlined body (see the module docstring)."""

    def __init__(self, rename, node_name, saved_name):
        self.rename = rename
        self.node_name = node_name
        self.saved_name = saved_name

    def visit_Expr(self, node):
        call = node.value
        if isinstance(call, ast.Call) and _is_self_attribute(call.func):
            values = [self.visit(argument) for argument in call.args]
            target = ast.Name(self.saved_name, ast.Store())
            return ast.Assign([target], ast.Tuple(values, ast.Load()), lineno=0)
        return self.generic_visit(node)

    def visit_Attribute(self, node):
        if _is_self_attribute(node) and node.attr in _SAVED and isinstance(node.ctx, ast.Load):
            return ast.Name(self.saved_name, ast.Load())
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id == "self":
            return ast.Name(self.node_name, node.ctx)
        return ast.Name(self.rename.get(node.id, node.id), node.ctx)


class _Fold(ast.NodeTransformer):
    """What the capture fixed, folded: `self.needs_input_grad` is the node's tuple of
    bools, a name assigned once from it is that constant, and an `if`, a conditional
    expression, `and`/`or`/`not` and an index on constants take their value (so a rule's
    branch for an input without a gradient is not written at all)."""

    def __init__(self, needs, assigned_once):
        self.needs = needs
        self.once = assigned_once
        self.known = {}

    def fold_body(self, statements):
        result = []
        for statement in statements:
            folded = self.visit(statement)
            if folded is None:
                continue
            result.extend(folded if isinstance(folded, list) else [folded])
        return result

    def visit_Attribute(self, node):
        if _is_self_attribute(node) and node.attr == "needs_input_grad":
            return ast.Constant(self.needs)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.known:
            return ast.Constant(self.known[node.id])
        return node

    def visit_Assign(self, node):
        node.value = self.visit(node.value)
        target = node.targets[0] if len(node.targets) == 1 else None
        value = node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, tuple):
            names = target.elts if isinstance(target, ast.Tuple) else None
            if (
                names
                and len(names) == len(value.value)
                and all(isinstance(name, ast.Name) and name.id in self.once for name in names)
            ):
                self.known.update(zip((name.id for name in names), value.value))
                return None
        if isinstance(target, ast.Name) and target.id in self.once and _bool(value):
            self.known[target.id] = value.value
            return None
        node.targets = [self.visit(target) for target in node.targets]
        return node

    def visit_If(self, node):
        node.test = self.visit(node.test)
        if _bool(node.test):
            return self.fold_body(node.body if node.test.value else node.orelse) or None
        node.body = self.fold_body(node.body) or [ast.Pass()]
        node.orelse = self.fold_body(node.orelse)
        return node

    def visit_With(self, node):
        node.items = [self.visit(item) for item in node.items]
        node.body = self.fold_body(node.body) or [ast.Pass()]
        return node

    def visit_IfExp(self, node):
        node = self.generic_visit(node)
        if _bool(node.test):
            return node.body if node.test.value else node.orelse
        return node

    def visit_Subscript(self, node):
        node = self.generic_visit(node)
        if (
            isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, tuple)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, int)
        ):
            return ast.Constant(node.value.value[node.slice.value])
        return node

    def visit_UnaryOp(self, node):
        node = self.generic_visit(node)
        if isinstance(node.op, ast.Not) and _bool(node.operand):
            return ast.Constant(not node.operand.value)
        return node

    def visit_BoolOp(self, node):
        node = self.generic_visit(node)
        if all(_bool(value) for value in node.values):
            values = [value.value for value in node.values]
            return ast.Constant(all(values) if isinstance(node.op, ast.And) else any(values))
        return node


def _bool(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, bool)


def _assigned_once(statements) -> frozenset:
    counts = {}
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                counts[node.id] = counts.get(node.id, 0) + 1
    return frozenset(name for name, count in counts.items() if count == 1)


def write(code, body, prefix, node_name, saved_name, result, arguments, needs=None):
    """Write `body` into `code` (a codegen.Source): its parameters take `arguments` (name ->
    an expression), its result goes into the name `result`; `needs`, the node's
    needs_input_grad, is folded in. Returns its locals' names."""
    rename = {name: f"{prefix}_{name}" for name in body.local_names}
    rename[RESULT] = result
    for name, value in body.global_values.items():
        if isinstance(value, types.ModuleType):
            rename[name] = code.bind(value, name)
        else:
            rename[name] = code.bind(value, f"{name}_")
    for name in body.parameters:
        code.line(f"{rename[name]} = {arguments[name]}")
    rewrite = _Rewrite(rename, node_name, saved_name)
    statements = [_copy(statement) for statement in body.statements]
    if needs is not None:
        statements = _Fold(tuple(needs), _assigned_once(statements)).fold_body(statements)
    for statement in statements:
        tree = ast.fix_missing_locations(rewrite.visit(statement))
        for text in ast.unparse(tree).splitlines():
            code.line(text)
    return [rename[name] for name in sorted(body.local_names) if name != RESULT]


def _copy(statement):
    return copy.deepcopy(statement)


def rule_of(node, method):
    """The inlinable body of `node`'s `method` ("forward": its `compute` if it has one,
    the part the guards leave to run; or "backward"), or None."""
    if method == "forward":
        method = "compute" if hasattr(node, "compute") else "forward"
    function = getattr(type(node), method, None)
    if not isinstance(function, types.FunctionType):
        return None
    return body_of(function)
