"""Inlined rules: an op's own `forward` and `backward`, written into the replay's lines,
taken from their source (`inspect`, `ast`): the same statements, so the same bits, and no
second statement of any rule (why, and how it reads in a program: docs/compile.md).

What is rewritten, and only this: the method's parameters and locals get names of their
own (`f7_out`), its globals are bound in the generated function's namespace, `self` is the
node, the saved values (`self.save_for_backward(a, b)`, `self.saved_tensors`) and the
attributes the forward sets before anything reads them become names of the program
(`k9_s0`, `k9_count`: they pass from the forward to the backward without the node), a
`try` whose handlers only raise becomes its body (the guards fixed the shapes the eager
capture checked), and each `return` in tail position assigns the result. Then both
bodies are specialised to what the capture fixed (`prepare`, specialise.py). A method
that does anything else (calls one of its own methods, has a return elsewhere, a nested
function) is not inlined: its kernel calls it, as before.
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import textwrap
import types
import weakref
from typing import NamedTuple

import numpy as np

from .specialise import (
    MISSING,
    Fact,
    Specialise,
    clone,
    constant,
    drop_dead,
    frozen,
    is_self_attribute,
    loaded_names,
    overwritten,
    passes_self,
)

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
def body_of(function, method=True) -> Body | None:
    """The inlinable body of the method `function` (or, `method` False, of the function,
    its end a `return None`), or None where it cannot be inlined."""
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return None
    tree = ast.parse(source).body[0]
    arguments = tree.args
    if arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.posonlyargs:
        return None
    names = [argument.arg for argument in arguments.args]
    if not method:
        names.insert(0, "self")  # (no node: nothing else is named so)
    decorators = [ast.unparse(decorator) for decorator in tree.decorator_list]
    allowed = [[]] if method else [[], ["staticmethod"]]  # (a function may be a staticmethod)
    if not names or names[0] != "self" or decorators not in allowed:
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
    statements = _helpers_inlined(statements, function.__globals__, names)
    statements = _tail(statements if method else [*statements, ast.Return()])
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


def _helpers_inlined(statements, namespace, parameters) -> list:
    """The statements, each call of a @staticmethod made for its effect on a class of the
    same module (`Optimizer._subtract(parameter, lr * grad)` in `sgd_update`) replaced by
    the method's own statements: its parameters are the arguments that are names, the other
    arguments are assigned to them first, and its locals get the method's name in front.
    The same lines as the call runs, without the call."""
    nodes = [node for statement in statements for node in ast.walk(statement)]
    names = {node.id for node in nodes if isinstance(node, ast.Name)} | set(parameters)
    local = {node.id for node in nodes if _stored(node)} | set(parameters)
    result = []
    for statement in statements:
        lines = _helper_lines(statement, namespace, names, local)
        result.extend([statement] if lines is None else lines)
    return result


def _helper_lines(statement, namespace, names, local):
    """A helper call's statements (see `_helpers_inlined`), or None where it is no such call:
    `names` are those the caller uses, `local` its locals (which its globals must not be)."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    if not isinstance(call, ast.Call) or call.keywords or not isinstance(call.func, ast.Attribute):
        return None
    owner = call.func.value
    owner = namespace.get(owner.id) if isinstance(owner, ast.Name) else None
    helper = vars(owner).get(call.func.attr) if isinstance(owner, type) else None
    if not isinstance(helper, staticmethod) or helper.__func__.__globals__ is not namespace:
        return None
    body = body_of(helper.__func__, method=False)
    if body is None or len(call.args) != len(body.parameters) or local & set(body.global_values):
        return None
    *statements, end = clone(body.statements)  # (end: RESULT = its tail return's value)
    stored = {node.id for statement in statements for node in ast.walk(statement) if _stored(node)}
    prefix = call.func.attr.strip("_")
    rename = {name: f"{prefix}_{name}" for name in body.local_names}
    returns_none = isinstance(end.value, ast.Constant) and end.value.value is None
    if RESULT in stored or not returns_none or names & set(rename.values()):
        return None
    lines = []
    for parameter, argument in zip(body.parameters, call.args):
        if isinstance(argument, ast.Name) and parameter not in stored:
            rename[parameter] = argument.id
        else:
            lines.append(ast.Assign([ast.Name(rename[parameter], ast.Store())], argument, lineno=0))
    return lines + [_Renamed(rename).visit(statement) for statement in statements]


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
        and is_self_attribute(test.left)
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
    """No nested scope, no generator, no call of one of the node's own methods (but its
    save_for_backward, as a statement)."""
    saves = {
        id(node.value)
        for statement in statements
        for node in ast.walk(statement)
        if isinstance(node, ast.Expr) and _is_save(node.value)
    }
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, _NESTED):
                return False
            own_call = isinstance(node, ast.Call) and is_self_attribute(node.func)
            if own_call and id(node) not in saves:
                return False
    return True


# (a scope, a generator or a `return` of its own: not a straight body)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Return)
_NESTED += (ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal, ast.GeneratorExp)
_NESTED += (ast.ListComp, ast.SetComp, ast.DictComp)


# -- what the node keeps between its two kernels ------------------------------------------

SAVED = "__s"  # the program's names for the saved values: __s0, __s1, ... (or __s, a tuple)
ATTRIBUTE = "__a_"  # and for the attributes the forward sets: __a_index, ...


def saved_count(body):
    """How many values the forward's `save_for_backward` calls keep (0 if none): one name
    each; None when they differ or are starred (then one name holds the tuple)."""
    counts = set()
    for statement in body.statements:
        for node in ast.walk(statement):
            if _is_save(node):
                if any(isinstance(argument, ast.Starred) for argument in node.args):
                    return None
                counts.add(len(node.args))
    return counts.pop() if len(counts) == 1 else (0 if not counts else None)


def _is_save(node) -> bool:
    return (
        isinstance(node, ast.Call)
        and is_self_attribute(node.func)
        and node.func.attr == "save_for_backward"
    )


class _Channel(ast.NodeTransformer):
    """`self.save_for_backward(a, b)` as `__s0, __s1 = a, b`; `self.saved_tensors` (and
    `self.saved`) as `(__s0, __s1)`: the saved values pass in names of the program."""

    def __init__(self, count):
        self.count = count

    def names(self, context):
        if self.count is None:
            return ast.Name(SAVED, context())
        return ast.Tuple([ast.Name(f"{SAVED}{i}", context()) for i in range(self.count)], context())

    def visit_Expr(self, node):
        if not _is_save(node.value):
            return self.generic_visit(node)
        values = [self.visit(argument) for argument in node.value.args]
        if self.count == 1:
            return ast.Assign([ast.Name(f"{SAVED}0", ast.Store())], values[0], lineno=0)
        return ast.Assign([self.names(ast.Store)], ast.Tuple(values, ast.Load()), lineno=0)

    def visit_Attribute(self, node):
        if is_self_attribute(node) and node.attr in _SAVED and isinstance(node.ctx, ast.Load):
            return self.names(ast.Load)
        return self.generic_visit(node)


def _kept_attributes(statements) -> set:
    """The attributes the forward sets before anything reads them, at its top level (not
    in a branch or a loop): those pass in names of the program, not on the node."""
    decided = {}
    for statement in statements:
        for node in ast.walk(statement):
            if is_self_attribute(node) and isinstance(node.ctx, ast.Load):
                decided.setdefault(node.attr, False)  # (read first: the node's own)
        top = statement.targets if isinstance(statement, ast.Assign) else ()
        elements = [e for target in top for e in getattr(target, "elts", [target])]
        for node in ast.walk(statement):
            if is_self_attribute(node) and not isinstance(node.ctx, ast.Load):
                decided.setdefault(node.attr, any(node is element for element in elements))
    return {name for name, kept in decided.items() if kept}


class _Attributes(ast.NodeTransformer):
    def __init__(self, names):
        self.names = names

    def visit_Attribute(self, node):
        if is_self_attribute(node) and node.attr in self.names:
            return ast.Name(ATTRIBUTE + node.attr, node.ctx)
        return self.generic_visit(node)


class Pair(NamedTuple):
    """A node's forward and backward made ready to write: statements specialised to what
    the capture fixed (specialise.py), and the program's names they share."""

    forward: list
    backward: list | None
    channel: list  # the names of the node's kept values the forward assigns


_PREPARED = weakref.WeakKeyDictionary()  # codegen.Source -> {what prepare saw: its Pair}


def prepare(code, forward, backward, facts, grad_fact, inputs, needs, bind, shared=False):
    """Specialise a node's forward `forward` (a Body) and its `backward` (or None) to what
    the capture fixed: `facts` of the forward's parameters (name -> Fact), `grad_fact` of
    the backward's gradient, `inputs` the operands' facts, `needs` the node's
    needs_input_grad; `bind` names a value in the generated function (`code`'s);
    `shared`: other nodes hold this one (an option of theirs) and may read or set its
    attributes between its forward and its backward, which then stay on the node. The
    nodes of one program that see the same get the same Pair (an RNN's 512 steps'
    products: one specialisation)."""
    key = (
        id(forward),
        id(backward),
        tuple(needs),
        tuple((name, _fact_key(fact)) for name, fact in facts.items()),
        _fact_key(grad_fact),
        tuple(_fact_key(fact) for fact in inputs),
        shared,
    )
    known = _PREPARED.setdefault(code, {})
    pair = known.get(key)
    if pair is None:
        arguments = (forward, backward, facts, grad_fact, inputs, needs, bind, shared)
        pair = known[key] = _prepare(*arguments)
    return pair


def _fact_key(fact):
    if fact is None:
        return None
    value = fact.value
    if value is not MISSING and not (frozen(value) and _hashable(value)):
        value = ("object", id(value))
    expression = None if fact.expression is None else ast.dump(fact.expression)
    return (expression, value, fact.shape, fact.dtype, fact.plain)


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _channelled(body, count) -> list:
    """The body's statements with what the node keeps as names (`_Channel`)."""
    return [_Channel(count).visit(clone(s)) for s in body.statements]


def _of_body(body, function, *arguments):
    """`function(body, *arguments)`, once per body and arguments (what its statements say
    does not change)."""
    key = (id(body), function, arguments)
    known = _OF_BODY.get(key)
    if known is None or known[0] is not body:  # (the body kept: its id is not reused)
        if len(_OF_BODY) >= 2048:
            _OF_BODY.clear()
        known = _OF_BODY[key] = (body, function(body, *arguments))
    return known[1]


_OF_BODY = {}


def _passes_self(body) -> bool:
    return passes_self(body.statements)


def _prepare(forward, backward, facts, grad_fact, inputs, needs, bind, shared) -> Pair:
    count = _of_body(forward, saved_count)
    needs_fact = Fact(constant(tuple(needs), bind), tuple(needs))
    statements = [clone(s) for s in _of_body(forward, _channelled, count)]
    facts = {**_globals(forward), "self.needs_input_grad": needs_fact, **facts}
    known = Specialise(facts, bind, inputs)
    statements = known.block(statements)
    bodies = [forward] + ([backward] if backward is not None else [])
    given = shared or any(_of_body(body, _passes_self) for body in bodies)  # (kept on it)
    kept = set() if given else _kept_attributes(statements)
    backward_statements = None
    if backward is not None:
        passed = {**_globals(backward), "self.needs_input_grad": needs_fact}
        if grad_fact is not None:
            passed[backward.parameters[0]] = grad_fact
        for name, fact in known.facts.items():
            if shared and name.startswith("self.") and name != "self.needs_input_grad":
                continue  # (another node may change it before this backward)
            if name.startswith(("self.", SAVED)) and (
                fact.expression is None or getattr(fact.expression, "bound", False)
            ):
                passed[name] = fact  # (what the forward's folding found, for the backward)
        body = [clone(s) for s in _of_body(backward, _channelled, count)]
        saved = {name for s in statements for name in _assigned(s) if name.startswith(SAVED)}
        aliases = saved if not any(saved & _assigned(s) for s in body) else ()
        backward_statements = Specialise(passed, bind, inputs, aliases).block(body)
        backward_statements = [_Attributes(kept).visit(s) for s in backward_statements]
    statements = [_Attributes(kept).visit(s) for s in statements]
    bodies = [statements] + ([backward_statements] if backward_statements is not None else [])
    bodies = drop_dead(bodies, live={RESULT})
    statements = _result_named(bodies[0], forward)
    channel = sorted({name for s in statements for name in _assigned(s) if name.startswith("__")})
    return Pair(statements, bodies[1] if backward is not None else None, channel)


def _globals(body) -> dict:
    """The facts of a body's globals: their values (the names stay, bound as they are)."""
    return {name: Fact(None, value) for name, value in body.global_values.items()}


def _assigned(statement) -> set:
    return {node.id for node in ast.walk(statement) if _stored(node)}


def _result_named(statements, body):
    """A forward that ends `return out` (a local) computes into the result's name itself."""
    last = statements[-1] if statements else None
    if not (
        isinstance(last, ast.Assign)
        and isinstance(last.targets[0], ast.Name)
        and last.targets[0].id == RESULT
        and isinstance(last.value, ast.Name)
        and last.value.id in body.local_names
        and last.value.id not in body.parameters
        and not last.value.id.startswith("__")
    ):
        return statements
    local = last.value.id
    rename = _Renamed({local: RESULT})
    return [rename.visit(statement) for statement in statements[:-1]]


class _Renamed(ast.NodeTransformer):
    def __init__(self, names):
        self.names = names

    def visit_Name(self, node):
        return ast.Name(self.names[node.id], node.ctx) if node.id in self.names else node


class _Rewrite(ast.NodeTransformer):
    """Names for one inlined body: its locals get the prefix, the node's kept values the
    program's names, its globals their bound names, `self` the node's."""

    def __init__(self, rename, node_name, channel_prefix):
        self.rename = rename
        self.node_name = node_name
        self.channel_prefix = channel_prefix

    def visit_Name(self, node):
        if getattr(node, "bound", False):
            return node
        if node.id == "self":
            return ast.Name(self.node_name, node.ctx)
        if node.id.startswith(SAVED):
            return ast.Name(self.channel_prefix + "s" + node.id[3:], node.ctx)
        if node.id.startswith(ATTRIBUTE):
            return ast.Name(self.channel_prefix + node.id[4:], node.ctx)
        return ast.Name(self.rename.get(node.id, node.id), node.ctx)


def channel_names(channel, prefix) -> list:
    """The program's names of a node's kept values (`Pair.channel`)."""
    rewrite = _Rewrite({}, "", prefix)
    return [rewrite.visit(ast.Name(name, ast.Load())).id for name in channel]


def write(code, body, statements, prefix, node_name, channel_prefix, result, arguments, reuse=None):
    """Write `statements` (of `body`, specialised: `prepare`) into `code` (a
    codegen.Source): its parameters take `arguments` (name -> an expression), its result
    goes into the name `result`. Returns its locals' names, and, when the body ends in
    `return (a, b, ...)` and `result` is None, the elements' expressions instead of an
    assignment (each gradient then goes straight to its edge). `reuse(index)`: whether
    element `index` may be computed into the first parameter's array (see `_into`)."""
    statements = [clone(statement) for statement in statements]
    stored = {name for statement in statements for name in _assigned(statement)}
    loaded = loaded_names(statements)
    rename = {name: f"{prefix}_{name}" for name in body.local_names}
    rename[RESULT] = result or "r"
    for name, value in body.global_values.items():
        if isinstance(value, types.ModuleType):
            rename[name] = code.bind(value, name)
        else:
            rename[name] = code.bind(value, f"{name}_")
    for name in body.parameters:
        if name not in stored and arguments[name].isidentifier():
            rename[name] = arguments[name]  # (never assigned: the slot's name itself)
        elif name in loaded and not overwritten(name, statements):
            code.line(f"{rename[name]} = {arguments[name]}")
    rewrite = _Rewrite(rename, node_name, channel_prefix)
    elements = None
    last = statements[-1] if statements else None
    if (
        result is None
        and isinstance(last, ast.Assign)
        and isinstance(last.targets[0], ast.Name)
        and last.targets[0].id == RESULT
        and isinstance(last.value, ast.Tuple)
    ):
        statements = statements[:-1]
        values = last.value.elts
        if reuse is not None:
            values = _into(code, statements, values, body, reuse)
        elements = [
            ast.unparse(ast.fix_missing_locations(rewrite.visit(element))) for element in values
        ]
    for statement in statements:
        tree = ast.fix_missing_locations(rewrite.visit(statement))
        for text in ast.unparse(tree).splitlines():
            code.line(text)
    locals_ = [
        rename[name]
        for name in sorted(body.local_names)
        if name in stored and name != RESULT and not name.startswith("__")
    ]
    return locals_ if result is not None else (locals_, elements)


def _into(code, statements, elements, body, reuse) -> list:
    """The elements, one of them computed into g's own array where g, the output's gradient
    (the body's first parameter), is read nowhere else and `reuse` says the replay owns g
    and the result has g's shape and dtype: `g * x` as `multiply(g, x, out=g)`, and a call
    of a helper that declares `overwrite=` (`keep_where(g, mask)`: `overwrite=True`). The
    same numbers (the same ufunc on the same operands), one new array fewer. An element
    that is g itself, read nowhere else, is reported to `reuse` (`passed_on=True`)."""
    grad = body.parameters[0]
    live = [element for index, element in enumerate(elements) if index in reuse.live]
    uses = [
        node
        for tree in [*statements, *live]
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and node.id == grad
    ]
    if len(uses) != 1:
        return elements
    result = list(elements)
    for index, element in enumerate(elements):
        if element is uses[0]:
            reuse(index, passed_on=True)  # (g itself goes on: still the replay's, if it was)
        elif (
            isinstance(element, ast.BinOp)
            and isinstance(element.op, ast.Mult)
            and element.left is uses[0]
            and reuse(index)
        ):
            function = ast.Name(code.bind(np.multiply, "multiply"), ast.Load())
            function.bound = True
            out = ast.keyword("out", ast.Name(grad, ast.Load()))
            result[index] = ast.Call(function, [element.left, element.right], [out])
        elif _overwrites(element, uses[0], body.global_values) and reuse(index):
            overwrite = ast.keyword("overwrite", ast.Constant(True))
            result[index] = ast.Call(element.func, element.args, [overwrite])
    return result


def _overwrites(element, grad, global_values) -> bool:
    """Whether `element` calls a helper on g first (the same node) that declares it may
    write its result over that argument (an `overwrite` parameter, not given here)."""
    if not isinstance(element, ast.Call) or element.keywords or element.args[:1] != [grad]:
        return False
    helper = global_values.get(getattr(element.func, "id", None))
    if not isinstance(helper, types.FunctionType):
        return False
    return "overwrite" in inspect.signature(helper).parameters


def binder(code):
    """`bind` for the folding: a name in `code` for a value it found, the value's own name
    (a function's, a class's) or `known`, and a number."""

    def bind(value):
        name = getattr(value, "__name__", None)
        return code.bind(value, name if isinstance(name, str) and name.isidentifier() else "known")

    return bind


def rule_of(node, method):
    """The inlinable body of `node`'s `method` ("forward": its `compute` if it has one,
    the part the guards leave to run; or "backward"), or None."""
    if method == "forward":
        method = "compute" if hasattr(node, "compute") else "forward"
    function = getattr(type(node), method, None)
    if not isinstance(function, types.FunctionType):
        return None
    return body_of(function)
