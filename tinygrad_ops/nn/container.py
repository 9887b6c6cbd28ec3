"""The containers: `Sequential` (layers applied one after the other), `ModuleList` and
`ModuleDict` (layers held, and registered, for a forward written by hand)."""

from .module import Module


class Sequential(Module):
    """Feed the input through each layer in turn. Layers are registered as "0", "1", ...
    so parameter paths look like PyTorch's ("0.weight").

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import nn
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    >>> [name for name, _ in model.named_parameters()]
    ['0.weight', '0.bias', '2.weight', '2.bias']
    >>> model(tg.zeros(5, 4)).shape
    (5, 3)
    """

    def __init__(self, *layers):
        super().__init__()
        for index, layer in enumerate(layers):
            if not isinstance(layer, Module):
                raise TypeError(
                    f"Sequential: argument {index} is a {type(layer).__name__}, not a Module"
                )
            self.add_module(str(index), layer)

    def __len__(self):
        return len(self._modules)

    def __getitem__(self, index):
        layers = list(self._modules.values())
        if isinstance(index, slice):
            return Sequential(*layers[index])
        return layers[index]

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, layer):
        self.add_module(str(len(self._modules)), layer)
        return self

    def forward(self, x):
        for layer in self._modules.values():
            x = layer(x)
        return x


class ModuleList(Module):
    """A list of layers, registered as "0", "1", ... (so the optimizer sees their
    parameters, "layers.0.weight"); the forward that uses them is yours.

    >>> from tinygrad_ops import nn
    >>> class Deep(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
    ...     def forward(self, x):
    ...         for layer in self.layers:
    ...             x = layer(x).relu()
    ...         return x
    >>> len(list(Deep().parameters())), len(Deep().layers)
    (6, 3)
    """

    def __init__(self, modules=()):
        super().__init__()
        self.extend(modules)

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules):
        for module in modules:
            if not isinstance(module, Module):
                raise TypeError(f"ModuleList: got a {type(module).__name__}, not a Module")
            self.append(module)
        return self

    def __len__(self):
        return len(self._modules)

    def __getitem__(self, index):
        modules = list(self._modules.values())
        return ModuleList(modules[index]) if isinstance(index, slice) else modules[index]

    def __iter__(self):
        return iter(self._modules.values())

    def forward(self, *inputs):
        raise NotImplementedError("ModuleList has no forward: call its layers in yours")


class ModuleDict(Module):
    """Layers by name, registered under their keys ("heads.left.weight").

    >>> from tinygrad_ops import nn
    >>> heads = nn.ModuleDict({"left": nn.Linear(2, 1), "right": nn.Linear(2, 3)})
    >>> heads["right"].out_features, sorted(heads.keys())
    (3, ['left', 'right'])
    """

    def __init__(self, modules=None):
        super().__init__()
        for name, module in dict(modules or {}).items():
            self[name] = module

    def __setitem__(self, name, module):
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict: '{name}' is a {type(module).__name__}, not a Module")
        self.add_module(name, module)

    def __getitem__(self, name):
        return self._modules[name]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, name):
        return name in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def forward(self, *inputs):
        raise NotImplementedError("ModuleDict has no forward: call its layers in yours")
