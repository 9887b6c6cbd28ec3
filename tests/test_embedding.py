"""F.embedding and nn.Embedding (tinygrad_ops/functional.py, nn/embedding.py) against
PyTorch in float64: values, the weight's gradient (repeated indices add up, the padding row
gets none), and the errors."""

import numpy as np
import pytest
import torch

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)

WEIGHT = np.random.default_rng(0).standard_normal((6, 3))
INDICES = np.array([[0, 2, 2], [5, 0, 1]])


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_matches_torch_with_repeats_and_padding(padding_idx):
    ours = tg.Tensor(WEIGHT.copy(), requires_grad=True)
    theirs = torch.tensor(WEIGHT.copy(), requires_grad=True)
    out = F.embedding(tg.tensor(INDICES), ours, padding_idx=padding_idx)
    expected = torch.nn.functional.embedding(torch.tensor(INDICES), theirs, padding_idx=padding_idx)
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    upstream = np.random.default_rng(1).standard_normal(out.shape)
    (out * tg.Tensor(upstream)).sum().backward()
    (expected * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), atol=1e-12)


def test_embedding_module_trains_its_rows_and_keeps_the_padding_row_at_zero():
    tg.manual_seed(0)
    table = tg.nn.Embedding(4, 2, padding_idx=0)
    assert table.weight.shape == (4, 2)
    assert table.weight.numpy()[0].tolist() == [0.0, 0.0]
    assert [name for name, _ in table.named_parameters()] == ["weight"]
    optimizer = tg.optim.SGD(table.parameters(), lr=0.5)
    before = table.weight.numpy().copy()
    table(tg.tensor([0, 3, 3])).sum().backward()
    optimizer.step()
    after = table.weight.numpy()
    np.testing.assert_array_equal(after[0], [0.0, 0.0])
    np.testing.assert_array_equal(after[1:3], before[1:3])
    np.testing.assert_allclose(after[3], before[3] - 0.5 * 2)


def test_embedding_refuses_what_torch_refuses():
    weight = tg.Tensor(WEIGHT)
    with pytest.raises(TypeError, match="embedding: the indices must be an integer tensor"):
        F.embedding(tg.Tensor([0.0, 1.0]), weight)
    with pytest.raises(IndexError, match="embedding: index 6 is out of range for 6"):
        F.embedding(tg.tensor([6]), weight)
    with pytest.raises(IndexError, match="embedding: index -1 is out of range"):
        F.embedding(tg.tensor([-1]), weight)  # torch refuses a negative index too
    with pytest.raises(ValueError, match="embedding: weight must be 2-d"):
        F.embedding(tg.tensor([0]), tg.ones(3))
    with pytest.raises(ValueError, match="Embedding: padding_idx 4 is out of range"):
        tg.nn.Embedding(4, 2, padding_idx=4)
