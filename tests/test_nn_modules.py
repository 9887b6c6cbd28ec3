"""nn.Module bookkeeping and the layers, against PyTorch (float64) where it has them."""

import numpy as np
import pytest
import torch
from helpers import assert_parameter_grads_match

import tinygrad_ops as tg
from tinygrad_ops import nn

torch.set_num_threads(1)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(np.ones(3, dtype=np.float32))
        self.layer = nn.Linear(3, 3)
        self.register_buffer("steps", tg.Tensor(np.zeros((), dtype=np.int64)))
        self.register_buffer("scratch", tg.zeros(3), persistent=False)
        self.note = "not a parameter"

    def forward(self, x):
        return self.layer(x) * self.scale


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(3, 2))

    def forward(self, x):
        return self.head(self.block(x))


# -- registration -------------------------------------------------------------------------------


def test_parameters_buffers_and_children_are_registered_in_order():
    model = Model()
    names = [name for name, _ in model.named_parameters()]
    assert names == [
        "block.scale",
        "block.layer.weight",
        "block.layer.bias",
        "head.1.weight",
        "head.1.bias",
    ]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in model.parameters())
    assert [name for name, _ in model.named_buffers()] == ["block.steps", "block.scratch"]
    assert [type(child).__name__ for child in model.children()] == ["Block", "Sequential"]
    assert [path for path, _ in model.named_modules()] == [
        "",
        "block",
        "block.layer",
        "head",
        "head.0",
        "head.1",
    ]
    # Non-persistent buffers stay out of the state dict; plain attributes are not state.
    assert list(model.state_dict()) == names[:1] + ["block.steps"] + names[1:]
    assert model.block.note == "not a parameter"


def test_parameter_names_are_their_dotted_paths():
    model = Model()
    assert [p.name for p in model.parameters()] == [name for name, _ in model.named_parameters()]


def test_reassigning_and_deleting_attributes_updates_the_registry():
    model = Model()
    model.head = nn.Linear(3, 4)
    assert [name for name, _ in model.named_parameters()][-2:] == ["head.weight", "head.bias"]
    del model.block
    assert [name for name, _ in model.named_parameters()] == ["head.weight", "head.bias"]
    with pytest.raises(TypeError, match=r"nn\.Parameter"):
        model.head.weight = tg.zeros(4, 3)


def test_a_shared_parameter_is_listed_once():
    layer = nn.Linear(2, 2)
    model = nn.Sequential(layer, nn.Tanh(), layer)
    assert len(list(model.parameters())) == 2


def test_forgetting_super_init_is_a_clear_error():
    class Broken(nn.Module):
        def __init__(self):
            self.layer = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match=r"super\(\).__init__\(\)"):
        Broken()


def test_zero_grad_sets_gradients_to_none():
    model = Model()
    model(tg.randn(4, 3, seed=0)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_forward_hooks_run_and_can_be_removed():
    layer = nn.Linear(3, 2)
    calls = []
    pre = layer.register_forward_pre_hook(lambda module, inputs: calls.append(("pre", module)))
    post = layer.register_forward_hook(lambda module, inputs, output: output * 0)
    out = layer(tg.ones(1, 3))
    assert calls == [("pre", layer)]
    assert not out.numpy().any()  # the forward hook's result replaced the output
    pre.remove()
    post.remove()
    assert layer(tg.ones(1, 3)).numpy().any()
    assert len(calls) == 1


def test_manual_seed_makes_initialisation_reproducible():
    tg.manual_seed(3)
    first = [p.numpy().copy() for p in Model().parameters()]
    tg.manual_seed(3)
    second = [p.numpy().copy() for p in Model().parameters()]
    third = [p.numpy() for p in Model().parameters()]
    for a, b, _c in zip(first, second, third, strict=True):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, c) for a, c in zip(first, third, strict=True) if a.size > 3)


def test_linear_initialisation_follows_pytorch_bounds():
    layer = nn.Linear(400, 50, generator=np.random.default_rng(0))
    bound = 1 / np.sqrt(400)  # kaiming_uniform(a=sqrt(5)) reduces to 1/sqrt(fan_in)
    for parameter in (layer.weight, layer.bias):
        values = parameter.numpy()
        assert np.abs(values).max() <= bound
        assert np.abs(values).max() > 0.9 * bound  # spread over the whole interval
    assert layer.weight.shape == (50, 400)
    assert layer.weight.dtype == np.float32
    # The same bound as PyTorch's own layer draws from.
    reference = torch.nn.Linear(400, 50).weight.detach().numpy()
    assert np.abs(reference).max() <= bound + 1e-7


def test_to_double_keeps_the_same_parameter_objects():
    model = Model()
    before = list(model.parameters())
    model.double()
    after = list(model.parameters())
    assert all(a is b for a, b in zip(before, after, strict=True))
    assert all(p.dtype == np.float64 for p in after)


# -- state dicts ---------------------------------------------------------------------------------


def _norm_model(seed):
    tg.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(4, 6),
        nn.BatchNorm1d(6),
        nn.ReLU(),
        nn.LayerNorm(6),
        nn.Linear(6, 3),
        nn.RMSNorm(3),
    )


def test_state_dict_round_trip_through_save_and_load(tmp_path):
    model = _norm_model(0)
    model(tg.randn(8, 4, seed=1))  # training mode: moves the running statistics
    tg.save(model.state_dict(), tmp_path / "model.npz")
    copy = _norm_model(1)
    result = copy.load_state_dict(tg.load(tmp_path / "model.npz"))
    assert result.missing_keys == []
    assert result.unexpected_keys == []
    for (name, a), (_, b) in zip(
        model.state_dict().items(), copy.state_dict().items(), strict=True
    ):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
        assert a.dtype == b.dtype, name
    x = tg.randn(5, 4, seed=2)
    model.eval()
    copy.eval()
    np.testing.assert_array_equal(model(x).numpy(), copy(x).numpy())


def test_load_state_dict_names_missing_unexpected_and_mismatched_keys():
    model = _norm_model(0)
    state = dict(model.state_dict())
    del state["0.bias"]
    state["9.weight"] = np.zeros(2)
    state["4.weight"] = np.zeros((2, 2))
    with pytest.raises(RuntimeError) as error:
        model.load_state_dict(state)
    message = str(error.value)
    assert "missing keys: '0.bias'" in message
    assert "unexpected keys: '9.weight'" in message
    assert "size mismatch for 4.weight" in message
    assert "(2, 2)" in message
    assert "(3, 6)" in message
    # Non-strict loading skips missing and unexpected keys but never a wrong shape.
    state["4.weight"] = np.zeros((3, 6))
    result = model.load_state_dict(state, strict=False)
    assert result.missing_keys == ["0.bias"]
    assert result.unexpected_keys == ["9.weight"]
    assert not model[4].weight.numpy().any()


def _torch_pair():
    """The same architecture in both engines, ours loaded from PyTorch's state dict."""
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(
        torch.nn.Linear(5, 8),
        torch.nn.BatchNorm1d(8),
        torch.nn.GELU(),
        torch.nn.LayerNorm(8),
        torch.nn.Linear(8, 6),
        torch.nn.Tanh(),
        torch.nn.RMSNorm(6),
        torch.nn.Linear(6, 3),
        torch.nn.Sigmoid(),
    ).double()
    with torch.no_grad():  # non-trivial affine parameters and running statistics
        for name, value in theirs.state_dict().items():
            if value.dtype == torch.float64 and "running" not in name:
                value.add_(0.1 * torch.randn_like(value))
        theirs[1].running_mean.copy_(torch.randn(8) * 0.5)
        theirs[1].running_var.copy_(torch.rand(8) + 0.5)
    ours = nn.Sequential(
        nn.Linear(5, 8),
        nn.BatchNorm1d(8),
        nn.GELU(),
        nn.LayerNorm(8),
        nn.Linear(8, 6),
        nn.Tanh(),
        nn.RMSNorm(6),
        nn.Linear(6, 3),
        nn.Sigmoid(),
    ).double()
    ours.load_state_dict({key: value.numpy() for key, value in theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_a_pytorch_state_dict_gives_pytorchs_outputs_and_gradients(mode):
    ours, theirs = _torch_pair()
    getattr(ours, mode)()
    getattr(theirs, mode)()
    x = np.random.default_rng(0).standard_normal((7, 5))
    out = ours(tg.Tensor(x))
    expected = theirs(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12, rtol=1e-10)
    out.sum().backward()
    expected.sum().backward()
    theirs_grads = {name: p.grad.numpy() for name, p in theirs.named_parameters()}
    for name, parameter in ours.named_parameters():
        np.testing.assert_allclose(
            parameter.grad.numpy(), theirs_grads[name], atol=1e-10, rtol=1e-8, err_msg=name
        )
    # Running statistics moved in training mode only, as PyTorch's did.
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(
            ours.state_dict()[key].numpy(), value.numpy(), atol=1e-12, err_msg=key
        )


def test_rnn_cell_matches_pytorch_over_several_steps():
    torch.manual_seed(0)
    theirs = torch.nn.RNNCell(4, 6).double()
    ours = nn.RNNCell(4, 6).double()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({key: value.numpy() for key, value in theirs.state_dict().items()})
    inputs = np.random.default_rng(0).standard_normal((3, 2, 4))
    hidden, expected = None, None
    for step in inputs:
        hidden = ours(tg.Tensor(step), hidden)
        expected = theirs(torch.tensor(step), expected)
    np.testing.assert_allclose(hidden.numpy(), expected.detach().numpy(), atol=1e-12)
    hidden.sum().backward()
    expected.sum().backward()
    assert_parameter_grads_match(ours, theirs, atol=1e-10)


def test_rnn_cell_initialisation_bound():
    cell = nn.RNNCell(3, 16)
    for parameter in cell.parameters():
        assert np.abs(parameter.numpy()).max() <= 0.25  # 1/sqrt(hidden_size)


# -- train and eval ------------------------------------------------------------------------------


def test_batch_norm_uses_batch_statistics_in_training_and_running_ones_in_eval():
    layer = nn.BatchNorm1d(3, momentum=0.5).double()
    x = tg.Tensor(np.random.default_rng(0).normal(2.0, 3.0, size=(64, 3)))
    out = layer(x)
    np.testing.assert_allclose(out.numpy().mean(axis=0), 0, atol=1e-10)
    np.testing.assert_allclose(layer.running_mean.numpy(), 0.5 * x.numpy().mean(axis=0))
    np.testing.assert_allclose(layer.running_var.numpy(), 0.5 + 0.5 * x.numpy().var(axis=0, ddof=1))
    assert layer.num_batches_tracked.item() == 1
    model = nn.Sequential(layer).eval()
    assert not layer.training
    before = layer.running_mean.numpy().copy()
    out = model(x)
    expected = (x.numpy() - before) / np.sqrt(layer.running_var.numpy() + layer.eps)
    np.testing.assert_allclose(out.numpy(), expected, atol=1e-12)
    np.testing.assert_array_equal(layer.running_mean.numpy(), before)  # eval: no update
    assert layer.num_batches_tracked.item() == 1


def test_batch_norm_cumulative_average_when_momentum_is_none():
    ours = nn.BatchNorm1d(2, momentum=None).double()
    theirs = torch.nn.BatchNorm1d(2, momentum=None).double()
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((5, 2))
        ours(tg.Tensor(x))
        theirs(torch.tensor(x))
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), atol=1e-12)


def test_dropout_drops_in_training_and_is_the_identity_in_eval():
    tg.manual_seed(0)
    model = nn.Sequential(nn.Dropout(0.25))
    x = tg.ones(1000)
    out = model(x).numpy()
    assert set(np.unique(out).tolist()) == {0.0, np.float32(1 / 0.75)}
    assert 0.2 < np.mean(out == 0) < 0.3
    model.eval()
    assert not model[0].training
    np.testing.assert_array_equal(model(x).numpy(), x.numpy())
    model.train()
    assert model[0].training


def test_dropout_follows_manual_seed():
    tg.manual_seed(5)
    first = nn.Dropout(0.5)(tg.ones(50)).numpy()
    tg.manual_seed(5)
    np.testing.assert_array_equal(nn.Dropout(0.5)(tg.ones(50)).numpy(), first)


# -- layers' small contracts ---------------------------------------------------------------------


def test_linear_rejects_a_wrong_input_width():
    with pytest.raises(ValueError, match=r"last dimension must be 3.*\(2, 5\)"):
        nn.Linear(3, 2)(tg.zeros(2, 5))


def test_linear_without_bias_and_sequential_indexing():
    layer = nn.Linear(3, 2, bias=False)
    assert layer.bias is None
    assert [name for name, _ in layer.named_parameters()] == ["weight"]
    model = nn.Sequential(layer, nn.ReLU())
    assert len(model) == 2
    assert model[0] is layer
    assert isinstance(model[-1], nn.ReLU)
    assert "Linear(in_features=3, out_features=2, bias=False)" in repr(model)


def test_flatten_and_activations_match_pytorch():
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    pairs = [
        (nn.Flatten(), torch.nn.Flatten()),
        (nn.Flatten(0, 1), torch.nn.Flatten(0, 1)),
        (nn.Flatten(start_dim=-2), torch.nn.Flatten(start_dim=-2)),
        (nn.ReLU(), torch.nn.ReLU()),
        (nn.Tanh(), torch.nn.Tanh()),
        (nn.Sigmoid(), torch.nn.Sigmoid()),
        (nn.GELU(), torch.nn.GELU()),
    ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(
            ours(tg.Tensor(x)).numpy(),
            theirs(torch.tensor(x)).numpy(),
            atol=1e-12,
            err_msg=type(ours).__name__,
        )


class _Deep(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = layers

    def forward(self, x):
        for layer in self.layers:
            x = layer(x).tanh()
        return x


def test_module_list_registers_its_layers_as_torch_names_them():
    tg.manual_seed(0)
    ours = _Deep(nn.ModuleList([nn.Linear(3, 4), nn.Linear(4, 2)]))
    theirs = torch.nn.Module()
    theirs.layers = torch.nn.ModuleList([torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)])
    assert [name for name, _ in ours.named_parameters()] == [
        name for name, _ in theirs.named_parameters()
    ]
    ours.layers.append(nn.Linear(2, 2))
    assert len(ours.layers) == 3
    assert len(ours.layers[1:]) == 2
    assert isinstance(ours.layers[-1], nn.Linear)
    optimizer = tg.optim.SGD(ours.parameters(), lr=0.1)
    before = ours.layers[0].weight.numpy().copy()
    ours(tg.ones(2, 3)).sum().backward()
    optimizer.step()
    assert not np.array_equal(before, ours.layers[0].weight.numpy())  # it trains
    with pytest.raises(NotImplementedError, match="ModuleList has no forward"):
        ours.layers(tg.ones(2, 3))
    with pytest.raises(TypeError, match="ModuleList: got a int, not a Module"):
        nn.ModuleList([1])


def test_module_dict_registers_its_layers_under_their_keys():
    heads = nn.ModuleDict({"left": nn.Linear(2, 1)})
    heads["right"] = nn.Linear(2, 3)
    assert [name for name, _ in heads.named_parameters()] == [
        "left.weight", "left.bias", "right.weight", "right.bias"
    ]  # fmt: skip
    assert "left" in heads
    assert list(heads) == ["left", "right"]
    assert len(heads) == 2
    with pytest.raises(TypeError, match="ModuleDict: 'x' is a str, not a Module"):
        heads["x"] = "layer"


@pytest.mark.parametrize(
    "layers",
    [[nn.Linear(2, 2)], (nn.Linear(2, 2),), {"a": nn.Linear(2, 2)}, [nn.Parameter(np.ones(2))]],
    ids=["list", "tuple", "dict", "parameters"],
)
def test_a_plain_container_of_layers_is_refused_not_silently_left_untrained(layers):
    """PyTorch silently leaves such layers out of parameters(): they never train."""
    with pytest.raises(TypeError, match="is not registered, so the optimizer would never see"):
        _Deep(layers)
    _Deep([1, 2])  # a list of anything else is a plain attribute, as ever


def test_requires_grad_freezes_and_unfreezes_every_parameter():
    model = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))
    assert model[0].requires_grad_(False) is model[0]
    model(tg.ones(4, 2)).sum().backward()
    assert model[0].weight.grad is None
    assert model[0].bias.grad is None
    assert model[2].weight.grad is not None
    model.requires_grad_()
    assert all(parameter.requires_grad for parameter in model.parameters())
