"""Grouping ops by module call: which ops each `nn.Module` call made.

`module_calls(model)` is a context manager: inside it, every module of the model (from
`named_modules()`) has a forward pre-hook and a forward hook. When a call ends, the ops
between its inputs and its output are the ones it made: the walk goes back from the
output through the tape and stops at the call's input tensors, at leaves, and at ops that
belong to calls that started earlier. Calls that finish inside another call are its
children, so the groups nest as the modules do.

Only the hook methods are used (`register_forward_pre_hook`, `register_forward_hook`,
`named_modules`), so viz does not import nn. A tensor that a module reads from outside
its arguments (a global, say) is counted as its own input only if it is a leaf or was made
by an earlier module call; other history behind it would be drawn inside the call.
"""

from __future__ import annotations

from contextlib import contextmanager

from tinygrad_ops import Tensor


class ModuleCall:
    """One call of one module: where it sits in the model, and the ops it made."""

    __slots__ = (
        "id",
        "number",
        "path",
        "type_name",
        "call_index",
        "parent",
        "depth",
        "op_keys",
        "input_keys",
    )

    def __init__(self, number, path, type_name, call_index):
        self.id = f"g{number}"
        self.number = number  # the order in which calls started
        self.path = path
        self.type_name = type_name
        self.call_index = call_index  # 0 for the module's first call, 1 for the next...
        self.parent = None  # the enclosing ModuleCall, if any
        self.depth = 0
        self.op_keys = set()  # id() of the ops made directly in this call (not children's)
        self.input_keys = set()  # id() of the tensors passed in (drawn outside the call)

    @property
    def title(self) -> str:
        """'cell: RNNCell #3' (the call number only from the module's second call on)."""
        name = self.path or "(model)"
        number = f" #{self.call_index}" if self.call_index else ""
        return f"{name}: {self.type_name}{number}"

    def __repr__(self):
        return f"ModuleCall({self.title!r}, {len(self.op_keys)} ops)"


class ModuleCalls:
    """The calls recorded by `module_calls` (or by functions made with `wrap`), in the
    order they started.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import viz
    >>> calls = viz.ModuleCalls()
    >>> double = calls.wrap(lambda x: x * 2, "double")
    >>> out = double(double(tg.ones(3, requires_grad=True))).sum()
    >>> [call.title for call in calls.calls]
    ['double: function', 'double: function #1']
    """

    def __init__(self):
        self.calls: list[ModuleCall] = []
        self._call_of_op = {}  # id(op) -> ModuleCall (the innermost call that made it)
        self._keep_alive = []  # the ops whose ids are keys above
        self._stack = []  # the calls in progress, outermost first, with their input ids
        self._count_by_key = {}

    def call_of(self, op):
        """The innermost call that made `op` (None if it was made outside every call)."""
        return self._call_of_op.get(id(op))

    def begin(self, key, path, type_name, inputs):
        """A call of the module (or function) whose `id()` is `key` starts, with `inputs`."""
        index = self._count_by_key.get(key, 0)
        self._count_by_key[key] = index + 1
        call = ModuleCall(len(self.calls), path, type_name, index)
        call.parent = self._stack[-1][0] if self._stack else None
        call.depth = call.parent.depth + 1 if call.parent else 0
        self.calls.append(call)
        call.input_keys = {id(tensor) for tensor in _tensors_in(inputs)}
        self._stack.append((call, call.input_keys))

    def end(self, output):
        """The call begun last returns `output`: claim the ops between its inputs and it."""
        call, input_keys = self._stack.pop()
        pending = _tensors_in(output)
        seen = set()
        while pending:
            tensor = pending.pop()
            node = tensor._ctx
            if node is None or id(tensor) in input_keys or id(node) in seen:
                continue
            seen.add(id(node))
            owner = self._call_of_op.get(id(node))
            if owner is None:
                self._call_of_op[id(node)] = call
                self._keep_alive.append(node)
                call.op_keys.add(id(node))
            elif owner.number < call.number:
                continue  # made by a call that started before this one: outside it
            # Ops of child calls are walked through, to reach what this call made before them.
            for operand in node.inputs:
                if isinstance(operand, Tensor):
                    pending.append(operand)

    def wrap(self, function, name, type_name="function"):
        """`function`, recording each of its calls as a group named `name` (for code that
        is not an nn.Module: an RNN step written as a plain function, say)."""

        def recorded(*inputs):
            self.begin(id(recorded), name, type_name, inputs)
            output = None
            try:
                output = function(*inputs)
            finally:
                self.end(output)
            return output

        return recorded

    def __len__(self):
        return len(self.calls)

    def __repr__(self):
        return f"<ModuleCalls: {len(self.calls)} calls>"


def _tensors_in(value):
    """The Tensors in a module's inputs or output (a Tensor, or tuples/lists of them)."""
    found = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor):
            found.append(item)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return found


@contextmanager
def module_calls(model):
    """Record which ops each module call makes while the block runs; yields `ModuleCalls`.

    Pass the result to `draw(root, groups=calls, depth=...)` to draw one box per call.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import nn, viz
    >>> model = nn.Sequential(nn.Linear(3, 2), nn.Tanh())
    >>> with viz.module_calls(model) as calls:
    ...     out = model(tg.randn(4, 3, seed=0)).sum()
    >>> [call.title for call in calls.calls]
    ['(model): Sequential', '0: Linear', '1: Tanh']
    """
    record = ModuleCalls()
    handles = []

    def before(module, inputs):
        record.begin(id(module), paths[id(module)], type(module).__name__, inputs)

    def after(module, inputs, output):
        record.end(output)

    paths = {}
    for path, module in model.named_modules():
        paths[id(module)] = path
        handles.append(module.register_forward_pre_hook(before))
        handles.append(module.register_forward_hook(after))
    try:
        yield record
    finally:
        for handle in handles:
            handle.remove()
