"""docs/ops.md, the list of every op with its one-line rule, generated from the docstrings.

Run `python -m tinygrad_ops.opdocs` (from the repository root) to rewrite docs/ops.md;
tests/test_opdocs.py fails when the file is not what this module would write, so the list
cannot drift from the code. Each op's rule is the first paragraph of its docstring, as one
line; a Tensor method without a docstring takes the rule of what it calls (the primitive it
applies, or the function or method it delegates to), and an alias says whose alias it is.

>>> rows = tensor_method_rules()
>>> rows["exp"]
'`Exp`: out = exp(a);  da = g * out'
"""

import inspect
import re
import sys
from pathlib import Path

from . import functional, ops
from .tensor import Tensor

# The module tensor.py itself: the package's attribute `tensor` is the factory tg.tensor.
tensor_module = sys.modules[Tensor.__module__]

# Attributes and conversions of Tensor that are not ops (they record nothing).
TENSOR_NON_OPS = {
    "__module__", "__doc__", "__slots__", "__array_ufunc__", "__hash__", "__init__",
    "__weakref__", "__repr__", "__len__", "__iter__", "__bool__", "__float__", "__int__",
    "__array__", "__setitem__", "data", "grad", "requires_grad", "is_leaf", "grad_fn", "shape",
    "ndim", "dtype", "size", "name", "numpy", "item", "tolist", "backward", "register_hook",
}  # fmt: skip
# tg.* names that are not ops: modes, schedulers, saving, checking, compiling.
TOP_LEVEL_NON_OPS = {
    "available_schedulers", "backward_plan", "compile", "detect_anomaly", "enable_grad",
    "get_default_scheduler", "grad", "gradcheck", "is_grad_enabled", "load", "manual_seed",
    "no_grad", "register_scheduler", "save", "set_default_scheduler",
}  # fmt: skip
OPERATORS = {"+": "__add__", "-": "__sub__", "*": "__mul__", "/": "__truediv__", "@": "__matmul__"}
OUTPUT = Path("docs") / "ops.md"
COMMAND = "python -m tinygrad_ops.opdocs"


class MissingRuleError(ValueError):
    """Some op has no docstring to take its rule from."""


def first_paragraph(obj):
    """The first paragraph of obj's docstring as one line (None without a docstring)."""
    doc = inspect.getdoc(obj) if obj.__doc__ else None
    if not doc:
        return None
    paragraph = doc.split("\n\n")[0]
    return " ".join(line.strip() for line in paragraph.splitlines())


def _delegate_rule(function, seen):
    """The rule of what a docstring-less method calls: `Op.apply`, `module.function(` or
    `self.method(`, in that order of preference."""
    op_class = getattr(function, "op_class", None)  # an operator (tensor.binary_operator)
    if op_class is not None:
        return f"`{op_class.__name__}`: {first_paragraph(op_class)}"
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):  # a builtin or C function: no source to read
        return None
    applied = re.findall(r"\b([A-Z]\w*)\.apply\b", source)
    for name in applied:
        if name in ops.REGISTRY:
            return f"`{name}`: {first_paragraph(ops.REGISTRY[name])}"
    for module_name, name in re.findall(r"\b([a-z_]+)\.([a-z_]\w*)\(", source):
        module = getattr(ops, module_name, None) or getattr(tensor_module, module_name, None)
        target = getattr(module, name, None) if inspect.ismodule(module) else None
        if inspect.isfunction(target) and first_paragraph(target):
            return first_paragraph(target)
    for symbol in re.findall(r"\bself ([-+*/@]) ", source):
        return method_rule(OPERATORS[symbol], seen)
    in_place = function.__name__.endswith("_") or function.__name__.startswith("__i")
    for name in re.findall(r"\b([A-Z]\w*)\b", source) if in_place else ():  # the op passed on
        if name in ops.REGISTRY:
            return f"in place, `{name}`: {first_paragraph(ops.REGISTRY[name])}"
    for name in re.findall(r"\bself\.([a-z_]\w*)\(", source):
        if name not in seen and callable(getattr(Tensor, name, None)):
            rule = method_rule(name, seen | {name})
            if rule:
                return rule
    for name in re.findall(r"\breturn ([a-z_]\w*)\(self\b", source):
        target = getattr(tensor_module, name, None)
        if inspect.isfunction(target) and first_paragraph(target):
            return first_paragraph(target)
    return None


def method_rule(name, seen=frozenset()):
    """A Tensor method's rule: its docstring, an alias note, or what it delegates to."""
    member = inspect.getattr_static(Tensor, name)
    function = member.fget if isinstance(member, property) else member
    if inspect.isfunction(function) and function.__name__ != name and not name.startswith("__"):
        return f"alias of `{function.__name__}`"
    own = first_paragraph(function)
    return own if own else _delegate_rule(function, seen)


def tensor_method_rules():
    """{method name: rule} for every Tensor method that is an op (dunders included)."""
    defined = {name for cls in Tensor.__mro__[:-1] for name in vars(cls)}  # (and its mixins)
    names = sorted(
        name
        for name in defined
        if name not in TENSOR_NON_OPS and not (name.startswith("_") and not name.endswith("__"))
    )
    return {name: method_rule(name) for name in names}


def function_rules(namespace, names, skip=()):
    """{name: rule} for the public functions `names` of a namespace (classes skipped)."""
    rows = {}
    for name in sorted(names):
        value = getattr(namespace, name)
        if name not in skip and inspect.isfunction(value):
            rows[name] = first_paragraph(value)
    return rows


def primitive_rules():
    return {op.__name__: first_paragraph(op) for op in ops.PRIMITIVES}


def _table(title, rows, prefix=""):
    missing = [name for name, rule in rows.items() if not rule]
    if missing:
        raise MissingRuleError(
            f"{title}: no rule for {', '.join(missing)}: give each a docstring whose first "
            f"paragraph states its rule (or add a non-op to opdocs' exclusion lists)"
        )
    lines = [f"## {title}", "", "| op | rule |", "|---|---|"]
    for name, rule in rows.items():
        escaped = rule.replace("|", "\\|")
        lines.append(f"| `{prefix}{name}` | {escaped} |")
    return [*lines, ""]


def render():
    """The text of docs/ops.md."""
    import tinygrad_ops

    from . import __all__ as top_level_names

    lines = [
        "# Every op, one line each",
        "",
        f"Generated from the docstrings by `{COMMAND}`: do not edit by hand (the tests fail",
        "when this file is stale). Notation: `a`, `b` are the inputs, `out` the output, `g` the",
        "upstream gradient dL/d(out), `da` the gradient of input `a`. The derivations are in",
        "[derivations.md](derivations.md).",
        "",
    ]
    lines += _table("Primitives (one tape node each)", primitive_rules())
    lines += _table("Tensor methods and operators", tensor_method_rules(), "Tensor.")
    top_level = function_rules(tinygrad_ops, top_level_names, TOP_LEVEL_NON_OPS)
    lines += _table("Functions (tg.*)", top_level, "tg.")
    lines += _table("functional (F.*)", function_rules(functional, functional.__all__), "F.")
    return "\n".join(lines)


def main(argv=None):
    """Write docs/ops.md (or the path given as the one argument)."""
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0]) if argv else OUTPUT
    path.write_text(render() + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
