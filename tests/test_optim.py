"""Optimizers and schedulers step for step against PyTorch's, in float64."""

import numpy as np
import pytest
import torch

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import nn, optim

torch.set_num_threads(1)

CASES = {
    "sgd": (optim.SGD, torch.optim.SGD, {"lr": 0.1}),
    "sgd-momentum": (optim.SGD, torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
    "sgd-dampening": (optim.SGD, torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "dampening": 0.3}),
    "sgd-nesterov": (optim.SGD, torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    "sgd-weight-decay": (
        optim.SGD,
        torch.optim.SGD,
        {"lr": 0.1, "momentum": 0.5, "weight_decay": 0.1},
    ),
    "adam": (optim.Adam, torch.optim.Adam, {"lr": 0.05}),
    "adam-weight-decay": (
        optim.Adam,
        torch.optim.Adam,
        {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-6, "weight_decay": 0.1},
    ),
    "adamw": (optim.AdamW, torch.optim.AdamW, {"lr": 0.05}),
    "adamw-weight-decay": (optim.AdamW, torch.optim.AdamW, {"lr": 0.05, "weight_decay": 0.3}),
}


def _nets():
    """A small MLP in both engines with the same float64 weights."""
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)
    ).double()
    ours = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).double()
    ours.load_state_dict({key: value.numpy() for key, value in theirs.state_dict().items()})
    return ours, theirs


def _batches(steps=5):
    generator = np.random.default_rng(0)
    return [
        (generator.standard_normal((6, 4)), generator.integers(0, 3, size=6)) for _ in range(steps)
    ]


def _train_ours(model, optimizer, batches):
    for inputs, targets in batches:
        optimizer.zero_grad()
        F.cross_entropy(model(tg.Tensor(inputs)), targets).backward()
        optimizer.step()


def _train_theirs(model, optimizer, batches):
    for inputs, targets in batches:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(
            model(torch.tensor(inputs)), torch.tensor(targets)
        ).backward()
        optimizer.step()


@pytest.mark.parametrize("case", list(CASES))
def test_five_steps_match_pytorch(case):
    ours_class, theirs_class, settings = CASES[case]
    ours, theirs = _nets()
    batches = _batches()
    _train_ours(ours, ours_class(ours.parameters(), **settings), batches)
    _train_theirs(theirs, theirs_class(theirs.parameters(), **settings), batches)
    reference = dict(theirs.named_parameters())
    moved = 0.0
    for name, parameter in ours.named_parameters():
        expected = reference[name].detach().numpy()
        np.testing.assert_allclose(parameter.numpy(), expected, atol=1e-6, rtol=0, err_msg=name)
        # Tighter than the contract, to catch a rule that is only approximately right.
        np.testing.assert_allclose(parameter.numpy(), expected, atol=1e-12, rtol=1e-10)
        moved += np.abs(parameter.numpy() - _nets()[1].state_dict()[name].numpy()).sum()
    assert moved > 0.01  # the steps did something


def test_step_updates_parameters_in_place_and_bumps_their_version():
    layer = nn.Linear(3, 2)
    weight_array = layer.weight.data
    version = layer.weight._version[0]
    optimizer = optim.SGD(layer.parameters(), lr=0.1)
    out = layer(tg.ones(1, 3)).sum()
    out.backward()
    optimizer.step()
    assert layer.weight.data is weight_array
    assert layer.weight._version[0] > version
    assert layer.weight.is_leaf


def test_a_graph_saved_before_a_step_refuses_to_backward():
    parameter = nn.Parameter(tg.Tensor([1.0, 2.0]))
    optimizer = optim.SGD([parameter], lr=0.1)
    (parameter * parameter).sum().backward()
    stale = (parameter * parameter).sum()  # saves the parameter's current value
    optimizer.step()
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        stale.backward()


def test_parameters_without_gradients_are_left_alone():
    used = nn.Parameter(tg.Tensor([1.0]))
    unused = nn.Parameter(tg.Tensor([5.0]))
    optimizer = optim.Adam([used, unused], lr=0.1)
    (used * 2).sum().backward()
    optimizer.step()
    assert unused.item() == 5.0
    assert used.item() != 1.0


@pytest.mark.parametrize("case", ["sgd-momentum", "adam-weight-decay", "adamw"])
def test_state_dict_round_trip_continues_the_same_trajectory(tmp_path, case):
    ours_class, _, settings = CASES[case]
    batches = _batches(5)
    straight, _ = _nets()
    _train_ours(straight, ours_class(straight.parameters(), **settings), batches)

    first, _ = _nets()
    optimizer = ours_class(first.parameters(), **settings)
    _train_ours(first, optimizer, batches[:2])
    tg.save({"model": first.state_dict(), "optimizer": optimizer.state_dict()}, tmp_path / "c.npz")
    checkpoint = tg.load(tmp_path / "c.npz")
    second, _ = _nets()
    second.load_state_dict(checkpoint["model"])
    resumed = ours_class(second.parameters(), **settings)
    resumed.load_state_dict(checkpoint["optimizer"])
    _train_ours(second, resumed, batches[2:])
    for (name, a), (_, b) in zip(
        straight.named_parameters(), second.named_parameters(), strict=True
    ):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


def test_state_dict_layout_follows_pytorch():
    ours, theirs = _nets()
    batches = _batches(1)
    optimizer = optim.Adam(ours.parameters(), lr=0.01)
    reference = torch.optim.Adam(theirs.parameters(), lr=0.01)
    _train_ours(ours, optimizer, batches)
    _train_theirs(theirs, reference, batches)
    state, expected = optimizer.state_dict(), reference.state_dict()
    assert sorted(state["state"]) == sorted(expected["state"])
    assert state["param_groups"][0]["params"] == expected["param_groups"][0]["params"]
    np.testing.assert_allclose(state["state"][2]["exp_avg_sq"], expected["state"][2]["exp_avg_sq"])


def test_load_state_dict_rejects_a_different_model():
    ours, _ = _nets()
    optimizer = optim.SGD(ours.parameters(), lr=0.1, momentum=0.9)
    _train_ours(ours, optimizer, _batches(1))
    other = optim.SGD(nn.Linear(4, 8).parameters(), lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match="has 4 parameters, this optimizer has 2"):
        other.load_state_dict(optimizer.state_dict())


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: optim.SGD(p, lr=-1.0), "invalid lr"),
        (lambda p: optim.SGD(p, lr=0.1, nesterov=True), "Nesterov"),
        (lambda p: optim.Adam(p, betas=(0.9, 1.0)), "beta"),
        (lambda p: optim.Adam([], lr=0.1), "empty"),
        (lambda p: optim.SGD(p[0], lr=0.1), "iterable"),
    ],
)
def test_bad_settings_are_clear_errors(make, message):
    parameters = list(nn.Linear(2, 2).parameters())
    with pytest.raises((ValueError, TypeError), match=message):
        make(parameters)


def test_zero_grad_sets_gradients_to_none():
    parameter = nn.Parameter(tg.Tensor([1.0]))
    optimizer = optim.SGD([parameter], lr=0.1)
    (parameter * 3).sum().backward()
    optimizer.zero_grad()
    assert parameter.grad is None


@pytest.mark.parametrize(
    ("ours_class", "theirs_class", "settings"),
    [
        (optim.StepLR, torch.optim.lr_scheduler.StepLR, {"step_size": 3, "gamma": 0.5}),
        (optim.CosineAnnealingLR, torch.optim.lr_scheduler.CosineAnnealingLR, {"T_max": 7}),
        (
            optim.CosineAnnealingLR,
            torch.optim.lr_scheduler.CosineAnnealingLR,
            {"T_max": 5, "eta_min": 0.01},
        ),
    ],
)
def test_schedulers_match_pytorch(ours_class, theirs_class, settings):
    ours_optimizer = optim.SGD([nn.Parameter(tg.Tensor([1.0]))], lr=0.2)
    theirs_optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.2)
    ours = ours_class(ours_optimizer, **settings)
    theirs = theirs_class(theirs_optimizer, **settings)
    for _ in range(8):
        np.testing.assert_allclose(ours.get_last_lr(), theirs.get_last_lr(), atol=1e-12)
        theirs_optimizer.step()
        ours.step()
        theirs.step()


def test_scheduler_state_dict_round_trip():
    optimizer = optim.SGD([nn.Parameter(tg.Tensor([1.0]))], lr=1.0)
    scheduler = optim.StepLR(optimizer, step_size=2)
    for _ in range(3):
        scheduler.step()
    restored_optimizer = optim.SGD([nn.Parameter(tg.Tensor([1.0]))], lr=1.0)
    restored = optim.StepLR(restored_optimizer, step_size=2)
    restored.load_state_dict(scheduler.state_dict())
    assert restored.get_last_lr() == scheduler.get_last_lr() == [0.1]


def _tiny_problem(seed=0):
    generator = np.random.default_rng(seed)
    weight = generator.standard_normal((3, 2))
    x, y = generator.standard_normal((4, 3)), generator.standard_normal((4, 2))
    return weight, x, y


def test_zero_grad_without_none_zeroes_in_place_as_pytorch():
    weight, x, y = _tiny_problem()
    ours, theirs = (
        tg.Tensor(weight.copy(), requires_grad=True),
        torch.tensor(weight.copy(), requires_grad=True),
    )
    ours_opt = optim.SGD([ours], lr=0.1, momentum=0.9)
    theirs_opt = torch.optim.SGD([theirs], lr=0.1, momentum=0.9)
    grad_object = None
    for _ in range(3):
        ours_opt.zero_grad(set_to_none=False)
        theirs_opt.zero_grad(set_to_none=False)
        if grad_object is not None:  # the same tensor, its values zeros (PyTorch's too)
            assert ours.grad is grad_object
            np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
        F.mse_loss(tg.Tensor(x) @ ours, tg.Tensor(y)).backward()
        torch.nn.functional.mse_loss(torch.tensor(x) @ theirs, torch.tensor(y)).backward()
        grad_object = ours.grad
        ours_opt.step()
        theirs_opt.step()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), atol=1e-12)


def test_module_zero_grad_without_none_zeroes_in_place():
    layer = nn.Linear(3, 2)
    layer(tg.Tensor(np.ones((1, 3), np.float32))).sum().backward()
    grad = layer.weight.grad
    layer.zero_grad(set_to_none=False)
    assert layer.weight.grad is grad
    assert not grad.numpy().any()
    layer.zero_grad()
    assert layer.weight.grad is None


def test_compiled_step_with_zero_grad_in_place_matches_eager():
    weight, x, y = _tiny_problem(1)
    results = []
    for compiled in (False, True):
        parameter = tg.Tensor(weight.copy(), requires_grad=True)
        optimizer = optim.Adam([parameter], lr=0.05)

        def step(inputs, targets, parameter=parameter, optimizer=optimizer):
            optimizer.zero_grad(set_to_none=False)
            loss = F.mse_loss(inputs @ parameter, targets)
            loss.backward()
            optimizer.step()
            return loss

        run = tg.compile(step) if compiled else step
        losses = [run(tg.Tensor(x * k), tg.Tensor(y)).item() for k in (1.0, 0.5, 2.0, 1.5, 1.0)]
        results.append((losses, parameter.numpy().copy(), parameter.grad.numpy().copy()))
    eager, replayed = results
    assert eager[0] == replayed[0]
    np.testing.assert_array_equal(eager[1], replayed[1])
    np.testing.assert_array_equal(eager[2], replayed[2])


@pytest.mark.parametrize("zero_first", [True, False])
def test_compiled_step_with_module_zero_grad_in_place_matches_eager(zero_first):
    """model.zero_grad(set_to_none=False) is replayed by calling it again: the same
    gradient tensors, zeroed in place at every call, and the eager numbers bit for bit
    (before the forward, and after it as in `tinygrad-ops train`'s step)."""
    generator = np.random.default_rng(3)
    batches = [
        (generator.standard_normal((5, 3)).astype(np.float32), generator.standard_normal((5, 2)))
        for _ in range(6)
    ]
    results = []
    for compiled in (False, True):
        tg.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
        optimizer = optim.Adam(model.parameters(), lr=0.05)

        def step(inputs, targets, model=model, optimizer=optimizer):
            if zero_first:
                model.zero_grad(set_to_none=False)
            loss = F.mse_loss(model(inputs), targets.float())
            if not zero_first:
                model.zero_grad(set_to_none=False)
            loss.backward()
            optimizer.step()
            return loss

        run = tg.compile(step) if compiled else step
        losses, grad_objects = [], []
        for x, y in batches:
            losses.append(run(tg.Tensor(x), tg.Tensor(y)).item())
            grad_objects.append([parameter.grad for parameter in model.parameters()])
        # The gradients the first step made, zeroed in place at each step after it.
        for later in grad_objects[1:]:
            assert all(a is b for a, b in zip(later, grad_objects[0]))
        state = [parameter.numpy().copy() for parameter in model.parameters()]
        grads = [parameter.grad.numpy().copy() for parameter in model.parameters()]
        results.append((losses, state, grads))
    (eager_losses, *eager), (replayed_losses, *replayed) = results
    assert eager_losses == replayed_losses
    for eager_arrays, replayed_arrays in zip(eager, replayed):
        for a, b in zip(eager_arrays, replayed_arrays):
            np.testing.assert_array_equal(a, b)


def _torch_and_our_lrs(ours_factory, theirs_factory, epochs=8):
    ours_optimizer = tg.optim.SGD([tg.nn.Parameter(tg.zeros(1))], lr=0.8)
    theirs_optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.8)
    ours, theirs = ours_factory(ours_optimizer), theirs_factory(theirs_optimizer)
    ours_lrs, theirs_lrs = [], []
    for _ in range(epochs):
        ours_lrs.append(ours.get_last_lr()[0])
        theirs_lrs.append(theirs.get_last_lr()[0])
        ours_optimizer.step()
        theirs_optimizer.step()
        ours.step()
        theirs.step()
    return ours_lrs, theirs_lrs


@pytest.mark.parametrize(
    "name",
    ["ExponentialLR", "MultiStepLR", "LambdaLR", "StepLR", "CosineAnnealingLR"],
)
def test_lr_schedulers_follow_torchs(name):
    from tinygrad_ops.optim import lr_scheduler  # PyTorch's path

    options = {
        "ExponentialLR": {"gamma": 0.7},
        "MultiStepLR": {"milestones": [2, 5], "gamma": 0.5},
        "LambdaLR": {"lr_lambda": lambda epoch: 0.9**epoch + 0.1},
        "StepLR": {"step_size": 3, "gamma": 0.5},
        "CosineAnnealingLR": {"T_max": 6, "eta_min": 0.1},
    }[name]
    ours, theirs = _torch_and_our_lrs(
        lambda optimizer: getattr(lr_scheduler, name)(optimizer, **options),
        lambda optimizer: getattr(torch.optim.lr_scheduler, name)(optimizer, **options),
    )
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_lambda_lr_takes_one_function_per_group_and_refuses_a_wrong_count():
    first, second = tg.nn.Parameter(tg.zeros(1)), tg.nn.Parameter(tg.zeros(1))
    optimizer = tg.optim.SGD([{"params": [first]}, {"params": [second], "lr": 2.0}], lr=1.0)
    scheduler = tg.optim.LambdaLR(optimizer, [lambda epoch: 1.0, lambda epoch: 0.5**epoch])
    scheduler.step()
    assert scheduler.get_last_lr() == [1.0, 1.0]
    with pytest.raises(ValueError, match="LambdaLR: 1 functions for 2 parameter groups"):
        tg.optim.LambdaLR(optimizer, [lambda epoch: 1.0])
    with pytest.raises(ValueError, match="MultiStepLR: milestones must be increasing"):
        tg.optim.MultiStepLR(optimizer, [3, 1])


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("RMSprop", {"lr": 0.01}),
        ("RMSprop", {"lr": 0.01, "alpha": 0.9, "weight_decay": 0.1, "momentum": 0.8}),
        ("RMSprop", {"lr": 0.02, "centered": True, "momentum": 0.5, "eps": 1e-6}),
        ("Adagrad", {"lr": 0.1}),
        ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.2}),
        ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.5, "eps": 1e-6}),
    ],
    ids=lambda value: value if isinstance(value, str) else "-".join(sorted(value)),
)
def test_rmsprop_and_adagrad_follow_torch_step_for_step(name, options):
    values = np.random.default_rng(0).standard_normal((3, 4))
    ours = tg.nn.Parameter(tg.Tensor(values.copy()))
    theirs = torch.nn.Parameter(torch.tensor(values.copy()))
    ours_optimizer = getattr(tg.optim, name)([ours], **options)
    theirs_optimizer = getattr(torch.optim, name)([theirs], **options)
    for step in range(6):
        ours_optimizer.zero_grad()
        theirs_optimizer.zero_grad()
        ((ours * ours).sum() * (step + 1) + ours.sum()).backward()
        ((theirs * theirs).sum() * (step + 1) + theirs.sum()).backward()
        ours_optimizer.step()
        theirs_optimizer.step()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-14)
    assert set(ours_optimizer.state_dict()["state"][0]) <= {
        "square_avg", "grad_avg", "momentum_buffer", "step", "sum"
    }  # fmt: skip


def test_rmsprop_and_adagrad_refuse_negative_settings():
    p = tg.nn.Parameter(tg.zeros(1))
    with pytest.raises(ValueError, match=r"invalid alpha: -0\.5"):
        tg.optim.RMSprop([p], alpha=-0.5)
    with pytest.raises(ValueError, match="invalid lr_decay: -1"):
        tg.optim.Adagrad([p], lr_decay=-1)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    generator = np.random.default_rng(0)
    values = [generator.standard_normal((3, 4)), generator.standard_normal(4)]
    ours = [tg.Tensor(v.copy(), requires_grad=True) for v in values]
    theirs = [torch.tensor(v.copy(), requires_grad=True) for v in values]
    ((ours[0] * 2.0).sum() + (ours[1] ** 2).sum()).backward()
    ((theirs[0] * 2.0).sum() + (theirs[1] ** 2).sum()).backward()
    total = tg.nn.utils.clip_grad_norm_(ours, max_norm, norm_type=norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type)
    np.testing.assert_allclose(total.item(), expected.item(), rtol=1e-12)
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-12)


def test_clip_grad_value_and_the_nonfinite_error_match_torch():
    w = tg.Tensor(np.array([3.0, -4.0, 0.5]), requires_grad=True)
    tw = torch.tensor([3.0, -4.0, 0.5], requires_grad=True)
    (w * w).sum().backward()
    (tw * tw).sum().backward()
    tg.nn.utils.clip_grad_value_(w, 2.0)
    torch.nn.utils.clip_grad_value_(tw, 2.0)
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())
    w.grad = tg.Tensor(np.array([np.inf, 1.0, 1.0]))
    with pytest.raises(RuntimeError, match="not finite"):
        tg.nn.utils.clip_grad_norm_(w, 1.0, error_if_nonfinite=True)
    assert tg.nn.utils.clip_grad_norm_([], 1.0).item() == 0.0


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_amsgrad_matches_torch_where_the_second_moment_falls(name):
    """Large gradients, then small ones: v falls, and AMSGrad divides by its maximum."""
    start = np.array([1.0, -2.0, 0.5])
    ours = tg.Tensor(start.copy(), requires_grad=True)
    plain = tg.Tensor(start.copy(), requires_grad=True)
    theirs = torch.tensor(start.copy(), requires_grad=True)
    optimizers = [
        getattr(optim, name)([ours], lr=0.1, amsgrad=True),
        getattr(optim, name)([plain], lr=0.1),
        getattr(torch.optim, name)([theirs], lr=0.1, amsgrad=True),
    ]
    for scale in [10.0, 10.0, 0.1, 0.1, 0.1]:
        for optimizer, parameter in zip(optimizers, (ours, plain, theirs), strict=True):
            optimizer.zero_grad()
            (parameter * parameter * scale).sum().backward()
            optimizer.step()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)
    assert np.abs(ours.numpy() - plain.numpy()).max() > 1e-4  # the option changes the steps
