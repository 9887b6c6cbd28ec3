"""What a solution may not do, read from its source before it runs (`ast`, no execution).

A solution is refused, with the reason, when it imports anything but the modules its
exercise allows (numpy and a few of the standard library's: never torch, the engine
where the exercise is to write the engine, or the shipped solutions), or reaches for
`__import__`, `exec`, `eval` or `importlib` to get round that, or for the frames of the
checks that call it (`__traceback__`, `f_back`, `f_locals`: their expected values).
This is a screen for honest grading, not a sandbox: the checks still run the code in a
child process with a time limit.

`matmul_spellings` finds every way of writing a matrix product (`@`, `A.__matmul__(B)`,
`np.matmul`, `np.dot`, `np.einsum`, ...) in one function, for the exercises that must do
without one.

>>> refusals("import numpy as np\\nimport torch\\n", NUMPY_ONLY)[0][:40]
'imports torch: write it with numpy (allo'
>>> matmul_spellings("def f(A, B):\\n    return np.dot(A, B)\\n", "f")
['np.dot (line 2)']
"""

from __future__ import annotations

import ast

NUMPY_ONLY = frozenset(
    {
        "__future__",
        "collections",
        "dataclasses",
        "functools",
        "itertools",
        "math",
        "numpy",
        "operator",
        "typing",
    }
)
WITH_THE_ENGINE = NUMPY_ONLY | {"tinygrad_ops"}  # for the exercises built on tg.Tensor
_NEVER = ("tinygrad_ops.exercises", "tinygrad_ops.micro", "tinygrad_ops.reference")
_ESCAPES = frozenset(
    {"__import__", "exec", "eval", "compile", "importlib", "__builtins__", "__subclasses__"}
    # the frames of the checks that call the solution (their expected values)
    | {"__traceback__", "tb_frame", "f_back", "f_locals", "f_globals", "__globals__", "gi_frame"}
)
_MATMUL_NAMES = frozenset(
    {
        "matmul",
        "__matmul__",
        "__rmatmul__",
        "__imatmul__",
        "dot",
        "vdot",
        "inner",
        "outer",
        "einsum",
        "tensordot",
        "multi_dot",
        "kron",
        "linalg",
    }
)


def _imported(tree):
    """(module name, line) of every import statement in `tree`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            yield ("." * node.level) + (node.module or ""), node.lineno


def _reason(module, allowed):
    """Why importing `module` is refused, or None when it is allowed."""
    top = module.split(".")[0]
    if "solutions" in module.split("."):
        return f"imports {module}: the shipped solutions; write your own"
    if module.startswith("."):
        return f"imports {module}: a solution is one file; import only {', '.join(sorted(allowed))}"
    if top == "tinygrad_ops" and (top not in allowed or module.startswith(_NEVER)):
        return (
            f"imports {module}: the engine would do the work the exercise asks you to write"
            " (numpy only here)"
        )
    if top not in allowed:
        return f"imports {module}: write it with numpy (allowed here: {', '.join(sorted(allowed))})"
    return None


def refusals(source, allowed) -> list:
    """The reasons to refuse `source` (empty when it may run); a file that does not parse
    is left to the import, which reports the syntax error with its line."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    reasons = [
        f"{reason} (line {line})"
        for module, line in _imported(tree)
        if (reason := _reason(module, allowed))
    ]
    modules = _module_names(tree)
    for node in ast.walk(tree):
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if isinstance(node, (ast.Name, ast.Attribute)) and name in _ESCAPES:
            reasons.append(f"uses {name} (line {node.lineno}): import what you need, plainly")
        if isinstance(node, ast.Name) and node.id in ("setattr", "delattr"):
            reasons.append(f"uses {node.id} (line {node.lineno}): a solution changes no module")
        targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
        for target in targets if isinstance(node, (ast.Assign, ast.AugAssign)) else ():
            while isinstance(target, (ast.Attribute, ast.Subscript)):
                target = target.value
                if isinstance(target, ast.Name) and target.id in modules:
                    reasons.append(
                        f"assigns into the module {target.id} (line {node.lineno}): a solution "
                        "may not change numpy or any module the checks use"
                    )
                    break
    return list(dict.fromkeys(reasons))


def _module_names(tree):
    """The names `tree` binds to imported modules (np for `import numpy as np`)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _function(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def matmul_spellings(source, function) -> list:
    """Every matrix product written in `function` of `source`: '@ (line 3)', 'np.dot ...'."""
    node = _function(ast.parse(source), function)
    if node is None:
        return []
    found = []
    for child in ast.walk(node):
        if isinstance(child, (ast.BinOp, ast.AugAssign)) and isinstance(child.op, ast.MatMult):
            found.append(f"@ (line {child.lineno})")
        elif isinstance(child, ast.Attribute) and child.attr in _MATMUL_NAMES:
            owner = child.value.id if isinstance(child.value, ast.Name) else "..."
            found.append(f"{owner}.{child.attr} (line {child.lineno})")
        elif isinstance(child, ast.Call) and getattr(child.func, "id", None) in _MATMUL_NAMES:
            found.append(f"{child.func.id} (line {child.lineno})")  # from numpy import dot
        elif isinstance(child, ast.Constant) and child.value in _MATMUL_NAMES:
            found.append(f"{child.value!r} (line {child.lineno})")
    return found


def loop_depth(source, function) -> int:
    """How deeply loops nest in `function` (for/while statements and comprehensions)."""
    node = _function(ast.parse(source), function)

    def depth(tree):
        if isinstance(tree, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return len(tree.generators) + depth(tree.elt)  # each `for` is one nested loop
        if isinstance(tree, ast.DictComp):
            return len(tree.generators) + max(depth(tree.key), depth(tree.value))
        inner = max((depth(child) for child in ast.iter_child_nodes(tree)), default=0)
        return inner + isinstance(tree, (ast.For, ast.While))

    return 0 if node is None else depth(node)
