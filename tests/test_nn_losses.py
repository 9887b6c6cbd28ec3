"""The loss layers (tinygrad_ops/nn/loss.py) and the small layers beside the activations
(LeakyReLU, Softmax, LogSoftmax, Identity), against torch.nn's classes of the same names."""

import numpy as np
import pytest
import torch

import tinygrad_ops as tg
from tinygrad_ops import nn

LOGITS = np.random.default_rng(0).standard_normal((4, 3))
CLASSES = np.array([0, 2, 1, 2])
PROBABILITIES = np.random.default_rng(1).uniform(0.05, 0.95, (4, 3))
WEIGHT = np.array([0.5, 1.0, 2.0])

CASES = [
    ("MSELoss", {}, LOGITS, PROBABILITIES),
    ("L1Loss", {"reduction": "sum"}, LOGITS, PROBABILITIES),
    ("CrossEntropyLoss", {}, LOGITS, CLASSES),
    ("CrossEntropyLoss", {"weight": WEIGHT, "label_smoothing": 0.1}, LOGITS, CLASSES),
    ("CrossEntropyLoss", {"ignore_index": 1, "reduction": "none"}, LOGITS, CLASSES),
    ("NLLLoss", {"weight": WEIGHT}, np.log(PROBABILITIES), CLASSES),
    ("BCELoss", {"weight": WEIGHT}, PROBABILITIES, PROBABILITIES[::-1].copy()),
    ("BCEWithLogitsLoss", {"pos_weight": WEIGHT}, LOGITS, PROBABILITIES),
    ("HuberLoss", {"delta": 0.5}, LOGITS, PROBABILITIES),
    ("SmoothL1Loss", {"beta": 0.5, "reduction": "none"}, LOGITS, PROBABILITIES),
    ("KLDivLoss", {"reduction": "batchmean"}, np.log(PROBABILITIES), PROBABILITIES),
]


def as_torch(value):
    return torch.tensor(value) if isinstance(value, np.ndarray) else value


@pytest.mark.parametrize(("name", "options", "input", "target"), CASES)
def test_loss_layers_match_torch(name, options, input, target):
    ours_options = {
        key: tg.Tensor(v) if isinstance(v, np.ndarray) else v for key, v in options.items()
    }
    theirs_options = {key: as_torch(value) for key, value in options.items()}
    x, torch_x = tg.Tensor(input, requires_grad=True), torch.tensor(input, requires_grad=True)
    ours_target = target if target.dtype.kind == "i" else tg.Tensor(target)
    loss = getattr(nn, name)(**ours_options)(x, ours_target)
    expected = getattr(torch.nn, name)(**theirs_options)(torch_x, torch.tensor(target))
    np.testing.assert_allclose(loss.numpy(), expected.detach().numpy(), rtol=1e-10)
    loss.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), torch_x.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_a_loss_layers_class_weight_is_a_buffer_as_torch():
    criterion = nn.CrossEntropyLoss(weight=tg.Tensor(WEIGHT))
    assert list(criterion.state_dict()) == list(
        torch.nn.CrossEntropyLoss(torch.tensor(WEIGHT)).state_dict()
    )
    assert "reduction='mean'" in repr(criterion)


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [(nn.LeakyReLU(0.2), torch.nn.LeakyReLU(0.2)), (nn.Softmax(dim=1), torch.nn.Softmax(dim=1)),
     (nn.LogSoftmax(dim=-1), torch.nn.LogSoftmax(dim=-1)), (nn.Identity(3), torch.nn.Identity(3))],
    ids=lambda layer: type(layer).__name__,
)  # fmt: skip
def test_small_layers_match_torch(ours, theirs):
    np.testing.assert_allclose(
        ours(tg.Tensor(LOGITS)).numpy(), theirs(torch.tensor(LOGITS)).numpy(), rtol=1e-12
    )


def test_softmax_without_a_dim_is_a_clear_error():
    with pytest.raises(ValueError, match="Softmax: pass dim"):
        nn.Softmax()(tg.Tensor(LOGITS))
