"""optim.ReduceLROnPlateau against torch's: the same learning rates over the same metrics,
for both modes, both threshold modes, cooldown, min_lr and eps."""

import numpy as np
import pytest
import torch

import tinygrad_ops as tg

METRICS = [5.0, 4.0, 4.0, 3.99999, 4.1, 4.0, 4.0, 3.0, 3.0, 3.0, 3.0, 2.9, 3.5, 3.5, 3.5, 3.5]
METRICS += [3.5, 3.5, 3.5, 3.5, 3.5, 3.5, 3.5, 3.5]


@pytest.mark.parametrize(
    "options",
    [
        {"patience": 1},
        {"patience": 2, "factor": 0.5, "cooldown": 2},
        {"patience": 0, "threshold_mode": "abs", "threshold": 0.05},
        {"mode": "max", "patience": 1, "factor": 0.3},
        {"mode": "max", "patience": 1, "threshold_mode": "abs", "threshold": 0.5},
        {"patience": 0, "factor": 0.5, "min_lr": [0.2, 0.01]},
        {"patience": 0, "factor": 0.9, "eps": 0.05},
    ],
)
def test_reduce_lr_on_plateau_matches_torch(options):
    ours_optimizer = tg.optim.SGD(
        [{"params": [tg.nn.Parameter(tg.zeros(1))], "lr": 1.0},
         {"params": [tg.nn.Parameter(tg.zeros(1))], "lr": 0.1}]
    )  # fmt: skip
    their_optimizer = torch.optim.SGD(
        [{"params": [torch.zeros(1, requires_grad=True)], "lr": 1.0},
         {"params": [torch.zeros(1, requires_grad=True)], "lr": 0.1}]
    )  # fmt: skip
    ours = tg.optim.ReduceLROnPlateau(ours_optimizer, **options)
    theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(their_optimizer, **options)
    for metric in METRICS:
        ours.step(tg.Tensor(metric) if metric > 4 else metric)
        theirs.step(metric)
        np.testing.assert_allclose(ours.get_last_lr(), theirs.get_last_lr(), rtol=1e-12)


def test_reduce_lr_on_plateau_state_dict_resumes():
    optimizer = tg.optim.SGD([tg.nn.Parameter(tg.zeros(1))], lr=1.0)
    first = tg.optim.ReduceLROnPlateau(optimizer, patience=2)
    for metric in (3.0, 3.0, 3.0):
        first.step(metric)
    second = tg.optim.ReduceLROnPlateau(optimizer, patience=2)
    second.load_state_dict(first.state_dict())
    second.step(3.0)
    assert second.get_last_lr() == pytest.approx([0.1])


def test_reduce_lr_on_plateau_refusals():
    optimizer = tg.optim.SGD([tg.nn.Parameter(tg.zeros(1))], lr=1.0)
    with pytest.raises(ValueError, match="factor"):
        tg.optim.ReduceLROnPlateau(optimizer, factor=1.0)
    with pytest.raises(ValueError, match="mode"):
        tg.optim.ReduceLROnPlateau(optimizer, mode="lowest")
    with pytest.raises(ValueError, match="min_lrs"):
        tg.optim.ReduceLROnPlateau(optimizer, min_lr=[0.1, 0.2])
