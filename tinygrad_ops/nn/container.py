"""`Sequential`: layers applied one after the other."""

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
