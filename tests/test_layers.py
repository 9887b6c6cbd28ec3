"""The house's layers (docs/architecture.md): each module imports only its own layer or the
layers below it, and no module-level imports form a cycle. Read with `ast`, not by importing.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"tinygrad_ops": "tinygrad_ops", "viz": "tinygrad_ops.viz"}

# Lowest first. The scheduler registry sits below the engine: the engine resolves scheduler
# names through it (it imports no implementation). A package's __init__ only re-exports.
LAYERS = [
    ("mode", ["tinygrad_ops.mode"]),
    ("ops", ["tinygrad_ops.ops"]),
    ("registry", ["tinygrad_ops.scheduler.registry"]),
    ("engine", ["tinygrad_ops.autograd"]),
    ("tensor", [
        "tinygrad_ops.tensor", "tinygrad_ops.tensor_convert", "tinygrad_ops.tensor_shape",
        "tinygrad_ops.tensor_math", "tinygrad_ops.tensor_reduce", "tinygrad_ops.tensor_inplace",
        "tinygrad_ops.tensor_functions", "tinygrad_ops.torch_functions", "tinygrad_ops.creation",
    ]),
    ("schedulers", ["tinygrad_ops.scheduler"]),
    ("library", [
        "tinygrad_ops.functional", "tinygrad_ops.nn", "tinygrad_ops.optim",
        "tinygrad_ops.gradcheck", "tinygrad_ops.serialize", "tinygrad_ops.data",
        "tinygrad_ops.reference", "tinygrad_ops.micro", "tinygrad_ops.jit",
        "tinygrad_ops.compile", "tinygrad_ops.bench", "tinygrad_ops.exercises",
        "tinygrad_ops.opdocs", "tinygrad_ops.control_flow", "tinygrad_ops.utils",
    ]),
    ("viz", ["tinygrad_ops.viz"]),
    ("cli", ["tinygrad_ops.cli", "tinygrad_ops.__main__"]),
]  # fmt: skip


def modules():
    """{dotted name: path} for every module of the two packages."""
    found = {}
    for folder, dotted in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([dotted, *parts])] = path
    return found


MODULES = modules()


def is_package(name):
    return MODULES[name].name == "__init__.py"


def owner(name):
    """The module of ours that `name` (a module or a name inside one) refers to, or None."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def top_level_imports(tree):
    """Import statements run at import time: module level, or inside a top-level if/try."""
    pending = list(tree.body)
    while pending:
        statement = pending.pop()
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            yield statement
        elif isinstance(statement, (ast.If, ast.Try)):
            pending.extend(statement.body + statement.orelse)
            pending.extend(getattr(statement, "finalbody", []))
            for handler in getattr(statement, "handlers", []):
                pending.extend(handler.body)


def imported_names(module, statement):
    if isinstance(statement, ast.Import):
        return [alias.name for alias in statement.names]
    base = module.split(".") if is_package(module) else module.split(".")[:-1]
    if statement.level:
        base = base[: len(base) - (statement.level - 1)]
        prefix = ".".join(base + ([statement.module] if statement.module else []))
    else:
        prefix = statement.module or ""
    return [prefix] + [f"{prefix}.{alias.name}" for alias in statement.names]


def import_edges():
    """{module: the modules of ours it imports at import time}."""
    edges = {}
    for module, path in MODULES.items():
        targets = set()
        for statement in top_level_imports(ast.parse(path.read_text())):
            for name in imported_names(module, statement):
                target = owner(name)
                if target is None or target == module:
                    continue
                if is_package(module) and target.startswith(module + "."):
                    continue  # a package's own submodules are not its dependencies
                if module.startswith(target + ".") and is_package(target):
                    continue  # nor is a submodule's own parent package
                targets.add(target)
        edges[module] = targets
    return edges


EDGES = import_edges()


def layer_of(module):
    best, depth = None, -1
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and len(prefix) > depth:
                best, depth = rank, len(prefix)
    return best


def test_every_module_has_a_layer():
    assert [m for m in MODULES if not is_package(m) and layer_of(m) is None] == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not is_package(m)))
def test_imports_go_only_down(module):
    upward = [
        f"{target} ({LAYERS[layer_of(target)][0]})"
        for target in sorted(EDGES[module])
        if not is_package(target) and layer_of(target) > layer_of(module)
    ]
    assert upward == [], f"{module} ({LAYERS[layer_of(module)][0]}) imports upward: {upward}"


def find_cycle(edges):
    """One import cycle as a list of modules, or None (an iterative depth-first search)."""
    state = {}  # module -> "open" while on the current path, "done" after
    for start in edges:
        if start in state:
            continue
        path = [start]
        iterators = [iter(sorted(edges[start]))]
        state[start] = "open"
        while iterators:
            target = next(iterators[-1], None)
            if target is None:
                state[path.pop()] = "done"
                iterators.pop()
            elif state.get(target) == "open":
                return path[path.index(target) :] + [target]
            elif target not in state:
                state[target] = "open"
                path.append(target)
                iterators.append(iter(sorted(edges.get(target, ()))))
    return None


def test_no_import_cycle():
    assert find_cycle(EDGES) is None


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def through_the_engine_package(module, path):
    """Names `module` imports from `tinygrad_ops.autograd` itself (its re-exports), not from
    the engine module that defines them; imports inside functions count too."""
    names = []
    for statement in ast.walk(ast.parse(path.read_text())):
        if not isinstance(statement, ast.ImportFrom):
            continue
        prefix, *targets = imported_names(module, statement)
        if prefix == "tinygrad_ops.autograd":
            names += [target for target in targets if owner(target) == "tinygrad_ops.autograd"]
    return names


def test_the_core_imports_engine_names_from_their_modules():
    # tinygrad_ops.autograd re-exports the public names for users (and viz, which uses only
    # the public API); inside the package each comes from autograd/graph, backward, ...
    core = [m for m in MODULES if not m.startswith("tinygrad_ops.viz")]
    found = {m: through_the_engine_package(m, MODULES[m]) for m in core}
    assert {module: names for module, names in found.items() if names} == {}


def test_the_engine_package_check_sees_a_re_export(tmp_path):
    path = tmp_path / "steps.py"
    path.write_text("def f():\n    from ..autograd import Op, graph\n")
    assert through_the_engine_package("tinygrad_ops.scheduler.steps", path) == [
        "tinygrad_ops.autograd.Op"
    ]


def test_the_engine_does_not_import_viz():
    import subprocess
    import sys

    code = (
        "import sys, tinygrad_ops, tinygrad_ops.nn, tinygrad_ops.optim; "
        "x = tinygrad_ops.Tensor([1.0], requires_grad=True); (x * x).sum().backward(); "
        "print(any(name.startswith('tinygrad_ops.viz') for name in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
