"""F.scaled_dot_product_attention, nn.MultiheadAttention and the transformer encoder layers
against PyTorch in float64 (values, the gradient of every input and parameter, state dicts)
and against central finite differences."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the conventional alias)
from helpers import check_op

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)

RNG = np.random.default_rng(7)
BOOL_MASK = RNG.random((5, 6)) > 0.5
BOOL_MASK[:, 0] = True
FLOAT_MASK = RNG.standard_normal((3, 5, 6))
FLOAT_MASK[1, 2, 4] = -np.inf
DEAD_BOOL = BOOL_MASK.copy()
DEAD_BOOL[2] = False  # query 2 may attend to nothing
DEAD_FLOAT = FLOAT_MASK.copy()
DEAD_FLOAT[0, 1] = -np.inf


def sdpa_case(name, shapes, **options):
    mask = options.pop("attn_mask", None)

    def ours(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **options)

    def theirs(q, k, v):
        torch_mask = None if mask is None else torch.tensor(mask)
        return TF.scaled_dot_product_attention(q, k, v, attn_mask=torch_mask, **options)

    return pytest.param(ours, theirs, shapes, id=name)


@pytest.mark.parametrize(
    ("ours", "theirs", "shapes"),
    [
        sdpa_case("plain", ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 7))),
        sdpa_case("unbatched", ((5, 4), (6, 4), (6, 7))),
        sdpa_case("one-query", ((1, 4), (6, 4), (6, 2))),
        sdpa_case("broadcast-batch", ((2, 1, 5, 4), (3, 6, 4), (1, 3, 6, 7))),
        sdpa_case("causal", ((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 7)), is_causal=True),
        sdpa_case("causal-more-keys", ((2, 5, 4), (2, 7, 4), (2, 7, 3)), is_causal=True),
        sdpa_case("causal-fewer-keys", ((2, 7, 4), (2, 5, 4), (2, 5, 3)), is_causal=True),
        sdpa_case("scale", ((2, 5, 4), (2, 6, 4), (2, 6, 3)), scale=0.3),
        sdpa_case("bool-mask", ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 7)), attn_mask=BOOL_MASK),
        sdpa_case("float-mask", ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 7)), attn_mask=FLOAT_MASK),
        sdpa_case("dead-row-bool", ((2, 5, 4), (2, 6, 4), (2, 6, 3)), attn_mask=DEAD_BOOL),
        sdpa_case("dead-row-float", ((2, 3, 5, 4), (3, 6, 4), (3, 6, 7)), attn_mask=DEAD_FLOAT),
        sdpa_case("gqa", ((2, 4, 5, 4), (2, 2, 6, 4), (2, 2, 6, 7)), enable_gqa=True),
    ],
)
def test_sdpa_against_torch(ours, theirs, shapes):
    check_op(ours, theirs, *shapes)


def test_sdpa_float_mask_gets_its_gradient():
    check_op(
        lambda q, k, v, mask: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
        lambda q, k, v, mask: TF.scaled_dot_product_attention(q, k, v, attn_mask=mask),
        (2, 5, 4),
        (2, 6, 4),
        (2, 6, 3),
        (5, 6),
    )


@pytest.mark.parametrize("options", [{}, {"is_causal": True}, {"attn_mask": BOOL_MASK[:5, :5]}])
def test_sdpa_finite_differences(options):
    q, k, v = (tg.Tensor(RNG.standard_normal((2, 5, 3)), requires_grad=True) for _ in range(3))
    assert tg.gradcheck(lambda *t: F.scaled_dot_product_attention(*t, **options), (q, k, v))


def test_sdpa_dropout_is_the_dropout_of_the_weights():
    """With dropout_p the weights are dropped by F.dropout's mask from the shared generator:
    the same seed gives softmax(q kᵀ/√E) dropped, then times v."""
    q, k, v = (tg.Tensor(RNG.standard_normal((2, 4, 3)), requires_grad=True) for _ in range(3))
    tg.manual_seed(3)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
    tg.manual_seed(3)
    weights = F.dropout((q @ k.transpose(-2, -1) / np.sqrt(3)).softmax(-1), p=0.4)
    np.testing.assert_allclose(out.numpy(), (weights @ v).numpy(), rtol=1e-12)
    assert 0.0 in out.numpy() or not np.allclose(
        out.numpy(), F.scaled_dot_product_attention(q, k, v).numpy()
    )


def test_sdpa_float32_and_float16_keep_the_dtype():
    for dtype in (np.float32, np.float16):
        q = tg.Tensor(RNG.standard_normal((2, 3, 4)).astype(dtype))
        out = F.scaled_dot_product_attention(q, q, q, attn_mask=DEAD_BOOL[:3, :3])
        assert out.dtype == dtype
        expected = TF.scaled_dot_product_attention(
            *(torch.tensor(q.numpy().astype(np.float32)),) * 3,
            attn_mask=torch.tensor(DEAD_BOOL[:3, :3]),
        )
        np.testing.assert_allclose(out.numpy(), expected.numpy(), atol=2e-3)


@pytest.mark.parametrize(
    ("arguments", "error", "words"),
    [
        (((2, 5, 4), (2, 6, 3), (2, 6, 3)), RuntimeError, "last dim"),
        (((2, 5, 4), (2, 6, 4), (2, 5, 3)), RuntimeError, "as many rows"),
        (((2, 5, 4), (3, 6, 4), (3, 6, 3)), RuntimeError, "broadcast"),
        (((4,), (6, 4), (6, 3)), RuntimeError, "at least 2 dims"),
    ],
)
def test_sdpa_refuses_bad_shapes(arguments, error, words):
    tensors = [tg.Tensor(np.ones(shape)) for shape in arguments]
    with pytest.raises(error, match=words):
        F.scaled_dot_product_attention(*tensors)


def test_sdpa_refuses_bad_masks():
    q = tg.Tensor(np.ones((2, 5, 4)))
    with pytest.raises(RuntimeError, match="not both"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=np.ones((5, 5), bool), is_causal=True)
    with pytest.raises(RuntimeError, match="does not broadcast"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=np.ones((4, 5), bool))
    with pytest.raises(TypeError, match="boolean or floating"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=np.ones((5, 5), int))
    with pytest.raises(TypeError, match="floating-point"):
        F.scaled_dot_product_attention(tg.tensor([[1, 2]]), q, q)


# -- nn.MultiheadAttention ------------------------------------------------------------------


def torch_pair(torch_class, ours_class, *arguments, **options):
    """The torch module (float64, seeded) and ours with its state dict loaded."""
    torch.manual_seed(0)
    theirs = torch_class(*arguments, **options).double()
    ours = ours_class(*arguments, dtype=np.float64, **options)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict())
    return ours, theirs


def compare_grads(ours, theirs, our_inputs, their_inputs):
    for mine, reference in zip(our_inputs, their_inputs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), atol=1e-12)
    their_parameters = dict(theirs.named_parameters())
    for name, parameter in ours.named_parameters():
        np.testing.assert_allclose(
            parameter.grad.numpy(), their_parameters[name].grad.numpy(), atol=1e-12, err_msg=name
        )


def run_attention(module_options, shapes, same=False, **call):
    ours, theirs = torch_pair(
        torch.nn.MultiheadAttention, tg.nn.MultiheadAttention, 8, 2, **module_options
    )
    arrays = [RNG.standard_normal(shape) for shape in shapes]
    their_inputs = [torch.tensor(array, requires_grad=True) for array in arrays]
    our_inputs = [tg.Tensor(array, requires_grad=True) for array in arrays]
    if same:  # self-attention: one tensor for query, key and value
        their_inputs, our_inputs = their_inputs[:1], our_inputs[:1]
    their_call = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in call.items()}
    expected, expected_weights = theirs(*(their_inputs * 3 if same else their_inputs), **their_call)
    out, weights = ours(*(our_inputs * 3 if same else our_inputs), **call)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12)
    upstream = RNG.standard_normal(out.shape)
    loss, their_loss = (out * tg.Tensor(upstream)).sum(), (expected * torch.tensor(upstream)).sum()
    assert (weights is None) == (expected_weights is None)
    if weights is not None:
        np.testing.assert_allclose(weights.numpy(), expected_weights.detach().numpy(), atol=1e-12)
        upstream = RNG.standard_normal(weights.shape)
        loss = loss + (weights * tg.Tensor(upstream)).sum()
        their_loss = their_loss + (expected_weights * torch.tensor(upstream)).sum()
    loss.backward()
    their_loss.backward()
    compare_grads(ours, theirs, our_inputs, their_inputs)


PADDING = np.array([[False, True, False, False, True, True], [False] * 6, [True] * 5 + [False]])
CAUSAL = np.triu(np.ones((5, 5), dtype=bool), 1)


@pytest.mark.parametrize(
    ("module_options", "shapes", "same", "call"),
    [
        pytest.param({}, [(5, 3, 8)] * 3, False, {}, id="seq-first"),
        pytest.param({}, [(5, 3, 8)], True, {}, id="self-attention"),
        pytest.param({"batch_first": True}, [(3, 5, 8), (3, 6, 8), (3, 6, 8)], False, {}, id="bf"),
        pytest.param({}, [(5, 8), (6, 8), (6, 8)], False, {}, id="unbatched"),
        pytest.param(
            {}, [(5, 3, 8), (6, 3, 8), (6, 3, 8)], False, {"need_weights": False}, id="nw"
        ),
        pytest.param(
            {}, [(5, 3, 8)] * 3, False, {"average_attn_weights": False}, id="per-head-weights"
        ),
        pytest.param({"kdim": 3, "vdim": 5}, [(5, 3, 8), (6, 3, 3), (6, 3, 5)], False, {}, id="kv"),
        pytest.param({"bias": False}, [(5, 3, 8)] * 3, False, {}, id="no-bias"),
        pytest.param(
            {"add_bias_kv": True, "add_zero_attn": True},
            [(5, 3, 8), (6, 3, 8), (6, 3, 8)],
            False,
            {"attn_mask": BOOL_MASK, "key_padding_mask": PADDING},
            id="bias-kv-zero-attn",
        ),
        pytest.param(
            {}, [(5, 3, 8), (6, 3, 8), (6, 3, 8)], False, {"attn_mask": BOOL_MASK}, id="mask"
        ),
        pytest.param(
            {},
            [(5, 3, 8), (6, 3, 8), (6, 3, 8)],
            False,
            {"attn_mask": RNG.standard_normal((6, 5, 6))},
            id="float-mask-per-head",
        ),
        pytest.param(
            {},
            [(5, 3, 8), (6, 3, 8), (6, 3, 8)],
            False,
            {"key_padding_mask": PADDING, "attn_mask": BOOL_MASK, "need_weights": False},
            id="both-masks",
        ),
        pytest.param(
            {"batch_first": True},
            [(3, 5, 8)],
            True,
            {"attn_mask": CAUSAL, "is_causal": True, "need_weights": False},
            id="causal-hint",
        ),
    ],
)
def test_multihead_attention_against_torch(module_options, shapes, same, call):
    run_attention(module_options, shapes, same, **call)


def test_multihead_attention_padded_out_sample_as_torch():
    """A sample whose every key is padded: NaN with the weights (softmax of -inf), 0 through
    scaled_dot_product_attention (need_weights=False), as PyTorch in training mode."""
    ours, theirs = torch_pair(torch.nn.MultiheadAttention, tg.nn.MultiheadAttention, 4, 2)
    x = RNG.standard_normal((3, 2, 4))
    padding = np.array([[True] * 3, [False, True, False]])
    for need_weights in (True, False):
        out, _ = ours(*[tg.Tensor(x)] * 3, key_padding_mask=padding, need_weights=need_weights)
        expected, _ = theirs(
            *[torch.tensor(x)] * 3,
            key_padding_mask=torch.tensor(padding),
            need_weights=need_weights,
        )
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12)


def test_multihead_attention_dropout_only_in_training():
    attention = tg.nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True)
    x = tg.randn(2, 4, 8, seed=1)
    attention.eval()
    first, _ = attention(x, x, x)
    second, _ = attention(x, x, x)
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    attention.train()
    tg.manual_seed(0)
    dropped, weights = attention(x, x, x, average_attn_weights=False)
    assert not np.allclose(dropped.numpy(), first.numpy())
    assert np.any(weights.numpy() == 0.0)


def test_multihead_attention_finite_differences():
    """Query, key and value (the parameters' gradients are checked against torch above)."""
    tg.manual_seed(0)
    attention = tg.nn.MultiheadAttention(4, 2, batch_first=True, dtype=np.float64)
    q, k, v = (tg.Tensor(RNG.standard_normal((2, 3, 4)), requires_grad=True) for _ in range(3))

    def output(q, k, v):
        return attention(q, k, v, attn_mask=CAUSAL[:3, :3])[0]

    assert tg.gradcheck(output, (q, k, v))


def test_multihead_attention_refusals():
    with pytest.raises(AssertionError, match="divisible"):
        tg.nn.MultiheadAttention(6, 4)
    attention = tg.nn.MultiheadAttention(8, 2)
    x = tg.randn(5, 3, 8)
    with pytest.raises(RuntimeError, match="last dims"):
        attention(x, tg.randn(5, 3, 4), x)
    with pytest.raises(RuntimeError, match="attn_mask must have shape"):
        attention(x, x, x, attn_mask=np.ones((4, 5), bool))
    with pytest.raises(RuntimeError, match="key_padding_mask must have shape"):
        attention(x, x, x, key_padding_mask=np.ones((5, 3), bool))
    with pytest.raises(RuntimeError, match="is_causal"):
        attention(x, x, x, is_causal=True)


# -- nn.TransformerEncoderLayer, nn.TransformerEncoder --------------------------------------


@pytest.mark.parametrize(
    ("options", "shape", "call"),
    [
        pytest.param({}, (5, 3, 8), {}, id="post-norm"),
        pytest.param(
            {"norm_first": True, "batch_first": True, "activation": "gelu"}, (3, 5, 8), {}, id="pre"
        ),
        pytest.param(
            {"batch_first": True},
            (3, 5, 8),
            {"src_mask": CAUSAL, "is_causal": True},
            id="causal",
        ),
        pytest.param(
            {"batch_first": True},
            (3, 6, 8),
            {"src_key_padding_mask": PADDING},
            id="padding",
        ),
        pytest.param({"bias": False, "activation": TF.gelu}, (5, 3, 8), {}, id="no-bias"),
    ],
)
def test_transformer_encoder_layer_against_torch(options, shape, call):
    ours_options = dict(options)
    if options.get("activation") is TF.gelu:
        ours_options["activation"] = F.gelu
    torch.manual_seed(0)
    theirs = torch.nn.TransformerEncoderLayer(
        8, 2, dim_feedforward=16, dropout=0.0, **options
    ).double()
    ours = tg.nn.TransformerEncoderLayer(
        8, 2, dim_feedforward=16, dropout=0.0, dtype=np.float64, **ours_options
    )
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict())
    x = RNG.standard_normal(shape)
    our_x, their_x = tg.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    their_call = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in call.items()}
    out, expected = ours(our_x, **call), theirs(their_x, **their_call)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12)
    upstream = RNG.standard_normal(out.shape)
    out.backward(upstream)
    expected.backward(torch.tensor(upstream))
    compare_grads(ours, theirs, [our_x], [their_x])


def test_transformer_encoder_against_torch():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
    theirs = torch.nn.TransformerEncoder(
        layer, 2, norm=torch.nn.LayerNorm(8), enable_nested_tensor=False
    ).double()
    ours = tg.nn.TransformerEncoder(
        tg.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, dtype=np.float64),
        2,
        norm=tg.nn.LayerNorm(8, dtype=np.float64),
    )
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict())
    x = RNG.standard_normal((5, 3, 8))
    mask = tg.nn.generate_square_subsequent_mask(5, dtype=np.float64)
    their_mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    np.testing.assert_array_equal(mask.numpy(), their_mask.numpy())
    our_x, their_x = tg.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, expected = ours(our_x, mask=mask), theirs(their_x, mask=their_mask)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12)
    out.sum().backward()
    expected.sum().backward()
    compare_grads(ours, theirs, [our_x], [their_x])


def test_transformer_encoder_layer_refuses_an_unknown_activation():
    with pytest.raises(RuntimeError, match="relu/gelu"):
        tg.nn.TransformerEncoderLayer(8, 2, activation="tanh")
