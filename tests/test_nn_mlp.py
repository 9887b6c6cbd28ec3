"""`nn.MLP`: the layers it builds, PyTorch-style parameter names, and bad arguments."""

import pytest

import tinygrad_ops as tg
from tinygrad_ops import nn


def test_layers_per_hidden_size_then_a_head():
    model = nn.MLP(64, [8, 4], 10, activation="gelu", norm="batch", dropout=0.5)
    assert [type(layer).__name__ for layer in model] == [
        *["Linear", "BatchNorm1d", "GELU", "Dropout"],
        *["Linear", "BatchNorm1d", "GELU", "Dropout"],
        "Linear",
    ]
    assert (model[0].in_features, model[4].out_features, model[8].out_features) == (64, 4, 10)


def test_parameter_names_are_those_of_a_sequential():
    tg.manual_seed(0)
    model = nn.MLP(3, [5], 2, norm="none")
    assert [name for name, _ in model.named_parameters()] == [
        "0.weight",
        "0.bias",
        "2.weight",
        "2.bias",
    ]


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"activation": "swish"}, "activation='swish'"),
        ({"norm": "group"}, "norm='group'"),
        ({"dropout": 1.0}, "dropout=1.0"),
    ],
)
def test_bad_arguments_name_themselves(arguments, words):
    with pytest.raises(ValueError, match=words):
        nn.MLP(3, [4], 2, **arguments)
