"""`Module` and `Parameter`: the bookkeeping that turns tensors into a trainable model.

A Module is a tree. Assigning a `Parameter` or another `Module` to an attribute registers
it (in `_parameters` / `_modules`, in assignment order), so `parameters()`,
`state_dict()`, `train()`/`eval()` and `zero_grad()` can walk the whole tree. Buffers
(`register_buffer`) are tensors that belong to the model's state but are not trained,
such as BatchNorm's running statistics. The design and the names follow `torch.nn.Module`,
so that habits and state dicts carry over.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

import numpy as np

from ..autograd.graph import clear_leaf_grad
from ..mode import no_grad, replayed_whole, watched
from ..ops.base import bump_version
from ..tensor import Tensor


class Parameter(Tensor):
    """A tensor that is a trainable weight of a Module: it requires grad and is registered
    when assigned to a Module attribute. It shares `data`'s array (no copy).

    >>> import numpy as np
    >>> from tinygrad_ops import nn
    >>> p = nn.Parameter(np.zeros(3, dtype=np.float32))
    >>> p.requires_grad, p.is_leaf
    (True, True)
    """

    def __init__(self, data, requires_grad=True):
        if isinstance(data, Tensor):
            data = data.data
        super().__init__(data, requires_grad=requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


class RemovableHandle:
    """Returned by the `register_*_hook` methods; `remove()` unregisters the hook.

    >>> import tinygrad_ops as tg
    >>> layer = tg.nn.ReLU()
    >>> handle = layer.register_forward_hook(lambda module, inputs, output: print("called"))
    >>> _ = layer(tg.ones(1))
    called
    >>> handle.remove()
    >>> _ = layer(tg.ones(1))
    """

    _next_key = itertools.count()

    def __init__(self, hooks):
        self.hooks = hooks
        self.key = next(RemovableHandle._next_key)

    def remove(self):
        self.hooks.pop(self.key, None)


IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Module:
    """Base class of every layer and model: subclass it, assign layers and Parameters in
    `__init__`, and write `forward`. Calling the module runs `forward` (and its hooks).

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import nn
    >>> class TwoLayers(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.hidden = nn.Linear(3, 4)
    ...         self.out = nn.Linear(4, 2)
    ...     def forward(self, x):
    ...         return self.out(self.hidden(x).relu())
    >>> model = TwoLayers()
    >>> [name for name, _ in model.named_parameters()]
    ['hidden.weight', 'hidden.bias', 'out.weight', 'out.bias']
    >>> model(tg.zeros(5, 3)).shape
    (5, 2)
    """

    def __init__(self):
        # object.__setattr__: our own __setattr__ reads these dictionaries.
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())

    # -- registration --------------------------------------------------------------------------

    def _check_initialised(self):
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"{type(self).__name__}: call super().__init__() at the start of __init__, "
                "before assigning parameters or layers"
            )

    def __setattr__(self, name, value):
        if isinstance(value, (Parameter, Module)):
            self._check_initialised()
            self._discard(name)
            if isinstance(value, Parameter):
                self.register_parameter(name, value)
            else:
                self.add_module(name, value)
        elif "_parameters" in self.__dict__ and name in self._parameters:
            if value is not None:
                raise TypeError(
                    f"cannot assign a {type(value).__name__} to parameter '{name}': assign an "
                    "nn.Parameter (or None)"
                )
            self._parameters[name] = None
        elif "_buffers" in self.__dict__ and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign a {type(value).__name__} to buffer '{name}': assign a Tensor"
                )
            self._buffers[name] = value
        else:
            _refuse_hidden_layers(name, value, self)
            if "_modules" in self.__dict__ and name in self._modules:
                del self._modules[name]
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        # Only called when normal lookup fails: parameters, buffers and children live in
        # the registration dictionaries, not in the instance __dict__.
        state = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in state and name in state[registry]:
                return state[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        if not self._discard(name):
            object.__delattr__(self, name)

    def _discard(self, name):
        """Forget `name` wherever it is registered; True if it was."""
        found = False
        for registry in (self._parameters, self._buffers, self._modules):
            if name in registry:
                del registry[name]
                found = True
        if found:
            self._non_persistent_buffers.discard(name)
        self.__dict__.pop(name, None)
        return found

    def register_parameter(self, name, parameter):
        """Register `parameter` (a Parameter, or None for an absent one such as bias=False).

        The parameter's `.name` becomes its dotted path in the model ("0.weight"), so
        graph drawings can label it.
        """
        self._check_initialised()
        _check_name(name, self)
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError(
                f"cannot register a {type(parameter).__name__} as parameter '{name}': wrap it "
                "in nn.Parameter"
            )
        self._parameters[name] = parameter
        if parameter is not None:
            parameter.name = name

    def register_buffer(self, name, tensor, persistent=True):
        """Register a tensor that is part of the module's state but not trained (running
        statistics); it goes into `state_dict()` unless `persistent=False`."""
        self._check_initialised()
        _check_name(name, self)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"buffer '{name}' must be a Tensor or None, got {type(tensor)}")
        self._buffers[name] = tensor
        if tensor is not None:
            tensor.name = name
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name, module):
        """Register `module` as a child under `name`; its parameters are renamed to their
        dotted paths from this module ("name.weight")."""
        self._check_initialised()
        _check_name(name, self)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"child '{name}' must be a Module, got {type(module).__name__}")
        self._modules[name] = module
        if module is not None:
            for path, tensor in itertools.chain(module.named_parameters(), module.named_buffers()):
                tensor.name = f"{name}.{path}"

    # -- walking the tree ----------------------------------------------------------------------

    def named_modules(self, prefix="", memo=None):
        """Yield (dotted path, module) for this module and every descendant, each once."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is None:
                continue
            path = f"{prefix}.{name}" if prefix else name
            yield from child.named_modules(path, memo)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        for name, child in self._modules.items():
            if child is not None:
                yield name, child

    def children(self):
        """The direct sub-modules, in registration order."""
        for _, child in self.named_children():
            yield child

    def _named_members(self, registry_name):
        seen = set()  # ids: a weight shared by two layers is listed once
        for path, module in self.named_modules():
            for name, tensor in getattr(module, registry_name).items():
                if tensor is None or id(tensor) in seen:
                    continue
                seen.add(id(tensor))
                yield (f"{path}.{name}" if path else name), tensor

    def named_parameters(self):
        """Yield (dotted path, parameter), e.g. ("0.weight", ...)."""
        return self._named_members("_parameters")

    def parameters(self):
        """Every trainable parameter, each once: what an optimizer takes."""
        for _, parameter in self.named_parameters():
            yield parameter

    def named_buffers(self):
        return self._named_members("_buffers")

    def buffers(self):
        for _, buffer in self.named_buffers():
            yield buffer

    # -- modes, gradients, dtype ---------------------------------------------------------------

    @replayed_whole
    def train(self, mode=True):
        """Set training mode (BatchNorm uses batch statistics, Dropout drops) on the tree
        (under tg.compile, replayed by calling it again)."""
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
        return self

    def eval(self):
        """Set evaluation mode: BatchNorm uses running statistics, Dropout does nothing."""
        return self.train(False)

    @replayed_whole
    def zero_grad(self, set_to_none=True):
        """Forget every parameter's gradient: set it to None (PyTorch's default), or with
        `set_to_none=False` fill it with zeros in place (under tg.compile, replayed by
        calling it again, either way)."""
        for parameter in self.parameters():
            clear_leaf_grad(parameter, set_to_none)

    def requires_grad_(self, requires_grad=True):
        """Set requires_grad on every parameter (False freezes them: backward then gives
        them no gradient and an optimizer leaves them as they are); returns self, as
        PyTorch's."""
        for parameter in self.parameters():
            parameter.requires_grad_(requires_grad)
        return self

    def to(self, dtype):
        """Convert every floating parameter and buffer to `dtype`, in place (the Parameter
        objects stay the same, so an optimizer built earlier still holds them)."""
        dtype = np.dtype(dtype)
        for tensor in itertools.chain(self.parameters(), self.buffers()):
            if tensor.data.dtype.kind == "f":
                tensor.data = tensor.data.astype(dtype)
                bump_version(tensor)
                if tensor.grad is not None:
                    tensor.grad = Tensor(tensor.grad.data.astype(dtype))
        return self

    def double(self):
        return self.to(np.float64)

    def float(self):
        return self.to(np.float32)

    def apply(self, function):
        """Call `function(module)` on every sub-module (children first), then on self."""
        for child in self.children():
            child.apply(function)
        function(self)
        return self

    # -- state dict ----------------------------------------------------------------------------

    def state_dict(self, prefix=""):
        """Parameters and persistent buffers by dotted path, in PyTorch's order (each
        module's own parameters, then its buffers, then its children). The values are
        detached tensors sharing memory with the model."""
        state = OrderedDict()
        for name, parameter in self._parameters.items():
            if parameter is not None:
                state[prefix + name] = parameter.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers:
                state[prefix + name] = buffer.detach()
        for name, child in self._modules.items():
            if child is not None:
                state.update(child.state_dict(prefix=f"{prefix}{name}."))
        return state

    def load_state_dict(self, state_dict, strict=True):
        """Copy values (Tensors, numpy arrays, or anything numpy can convert, such as a
        PyTorch state dict's tensors) into this model's parameters and buffers, in place.

        A value whose shape differs from the model's is always an error; with
        `strict=True`, so are missing and unexpected keys. The error lists every problem.
        Returns (missing_keys, unexpected_keys).
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(
                f"load_state_dict: expected a mapping of names to values (a state_dict), "
                f"got a {type(state_dict).__name__}"
            )
        own = self.state_dict()
        targets = {}
        for path, module in self.named_modules():
            prefix = f"{path}." if path else ""
            for registry in (module._parameters, module._buffers):
                for name, tensor in registry.items():
                    if prefix + name in own:
                        targets[prefix + name] = tensor
        missing = [key for key in own if key not in state_dict]
        unexpected = [key for key in state_dict if key not in own]
        problems = []
        converted = {}
        for key, value in state_dict.items():
            if key not in targets:
                continue
            array = _as_array(value)
            target = targets[key]
            if array.shape != target.shape:
                problems.append(
                    f"size mismatch for {key}: the checkpoint has shape {array.shape}, "
                    f"the model has shape {target.shape}"
                )
            else:
                converted[key] = array
        if strict and missing:
            problems.insert(0, "missing keys: " + ", ".join(repr(key) for key in missing))
        if strict and unexpected:
            problems.insert(0, "unexpected keys: " + ", ".join(repr(key) for key in unexpected))
        if problems:
            raise RuntimeError(
                f"error(s) in loading state_dict for {type(self).__name__}:\n  "
                + "\n  ".join(problems)
            )
        with no_grad():
            for key, array in converted.items():
                targets[key].copy_(array.astype(targets[key].dtype, copy=False))
        return IncompatibleKeys(missing, unexpected)

    # -- calling -------------------------------------------------------------------------------

    def forward(self, *inputs):  # pragma: no cover - every layer overrides it
        raise NotImplementedError(f"{type(self).__name__} has no forward() method")

    @watched  # (tg.compile: the module's train/eval flag and members become guards)
    def __call__(self, *inputs, **options):
        # Keyword arguments go to forward (MultiheadAttention's masks, as PyTorch's); the
        # hooks see the positional inputs, as PyTorch's hooks without with_kwargs.
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, inputs)
            if result is not None:
                inputs = result if isinstance(result, tuple) else (result,)
        output = self.forward(*inputs, **options)
        for hook in list(self._forward_hooks.values()):
            result = hook(self, inputs, output)
            if result is not None:
                output = result
        return output

    def register_forward_pre_hook(self, hook):
        """Call `hook(module, inputs)` before each forward; a returned value replaces the
        inputs. Returns a handle with `.remove()`. (Graph drawings use this to group the
        ops of each layer.)"""
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.key] = hook
        return handle

    def register_forward_hook(self, hook):
        """Call `hook(module, inputs, output)` after each forward; a returned value replaces
        the output. Returns a handle with `.remove()`."""
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.key] = hook
        return handle

    # -- printing ------------------------------------------------------------------------------

    def extra_repr(self):
        """The layer's settings, shown inside its repr (override in layers)."""
        return ""

    def __repr__(self):
        lines = []
        for name, child in self._modules.items():
            child_repr = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {child_repr}")
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        head = f"{type(self).__name__}({extra}"
        return head + "\n" + "\n".join(lines) + "\n)"


def _refuse_hidden_layers(name, value, module):
    """A plain list, tuple or dict of layers is not registered, in PyTorch either: their
    parameters would never train, and nothing would say so. Refuse it, naming the fix."""
    if isinstance(value, (list, tuple, dict)):
        items = value.values() if isinstance(value, dict) else value
        if any(isinstance(item, (Module, Parameter)) for item in items):
            container = "ModuleDict" if isinstance(value, dict) else "ModuleList"
            raise TypeError(
                f"{type(module).__name__}.{name}: a plain {type(value).__name__} of layers or "
                f"Parameters is not registered, so the optimizer would never see their "
                f"parameters; use nn.{container}(...) (or nn.Sequential)"
            )


def _check_name(name, module):
    if not isinstance(name, str) or not name or "." in name:
        raise KeyError(
            f"{type(module).__name__}: a parameter, buffer or child name must be a non-empty "
            f"string without '.', got {name!r}"
        )


def _as_array(value):
    if isinstance(value, Tensor):
        return value.data
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a PyTorch tensor
        return np.asarray(value.detach().cpu().numpy())
    return np.asarray(value)
