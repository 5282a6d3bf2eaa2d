"""kael.nn's recurrent, attention and transformer layers against torch.nn's: the same
parameters (names, order, shapes) and, loaded with torch's state, torch's outputs."""

import warnings

import numpy as np
import pytest
import torch
from parity_helpers import same

import kael
from kael import nn


def _pair(name, *args, **kwargs):
    t = getattr(torch.nn, name)(*args, **kwargs)
    k = getattr(nn, name)(*args, **kwargs)
    k.load_state_dict(t.state_dict())
    assert repr(k) == repr(t)
    assert [(n, tuple(p.shape)) for n, p in k.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in t.named_parameters()
    ]
    return k.eval(), t.eval()


def _close(k, t, tol=1e-5):
    if isinstance(t, tuple):
        assert isinstance(k, tuple) and len(k) == len(t)
        for a, b in zip(k, t):
            _close(a, b, tol)
        return
    assert k.shape == tuple(t.shape)
    np.testing.assert_allclose(k.numpy(), t.detach().numpy(), rtol=tol, atol=tol)


RECURRENT = [
    ("LSTM", (4, 6), {}),
    ("LSTM", (4, 6, 2), {"bidirectional": True, "batch_first": True, "proj_size": 3}),
    ("GRU", (4, 5, 2), {}),
    ("GRU", (4, 5), {"bidirectional": True, "bias": False}),
    ("RNN", (4, 5), {"nonlinearity": "relu"}),
    ("RNN", (4, 5, 3), {"batch_first": True}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), RECURRENT, ids=str)
def test_recurrent_stack_matches_torch_batched_unbatched_and_with_a_state(name, args, kwargs):
    k, t = _pair(name, *args, **kwargs)
    x = torch.randn(3, 7, 4)
    with torch.no_grad():
        expected = t(x)
        single = t(x[0])
        again = t(x, expected[1])
    _close(k(kael.tensor(x)), expected)
    _close(k(kael.tensor(x[0])), single)
    state = expected[1]
    kael_state = (
        tuple(kael.tensor(s.numpy()) for s in state)
        if isinstance(state, tuple)
        else kael.tensor(state.numpy())
    )
    _close(k(kael.tensor(x), kael_state), again)


def test_lstm_runs_a_packed_batch_as_torch():
    k, t = _pair("LSTM", 3, 4, 2)
    lengths = [5, 2, 4]
    padded = torch.randn(5, 3, 3)
    packed_t = torch.nn.utils.rnn.pack_padded_sequence(padded, lengths, enforce_sorted=False)
    packed_k = nn.utils.rnn.pack_padded_sequence(kael.tensor(padded), lengths, enforce_sorted=False)
    with torch.no_grad():
        out_t, (h_t, c_t) = t(packed_t)
    out_k, (h_k, c_k) = k(packed_k)
    _close(out_k.data, out_t.data)
    _close((h_k, c_k), (h_t, c_t))


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch_with_and_without_a_state(name):
    k, t = _pair(name, 4, 5)
    x = torch.randn(3, 4)
    with torch.no_grad():
        first = t(x)
        second = t(x, first)
        single = t(x[0])
    _close(k(kael.tensor(x)), first)
    state = tuple(kael.tensor(s.numpy()) for s in first) if name == "LSTMCell" else None
    state = state or kael.tensor(first.numpy())
    _close(k(kael.tensor(x), state), second)
    _close(k(kael.tensor(x[0])), single)


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("LSTM", {"proj_size": 6}, "proj_size has to be smaller than hidden_size"),
        ("LSTM", {"dropout": 1.5}, "dropout should be a number in range"),
        ("GRU", {"proj_size": 2}, "only supported for LSTM"),
        ("RNN", {"nonlinearity": "gelu"}, "Unknown nonlinearity 'gelu'"),
    ],
)
def test_recurrent_settings_are_checked_as_torch(name, kwargs, message):
    with pytest.raises(ValueError, match=message):
        getattr(torch.nn, name)(4, 6, **kwargs)
    with pytest.raises(kael.ValueError, match=message):
        getattr(nn, name)(4, 6, **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"batch_first": True, "add_bias_kv": True}, {"kdim": 3, "vdim": 5, "bias": False}],
    ids=str,
)
def test_multihead_attention_matches_torch(kwargs):
    k, t = _pair("MultiheadAttention", 8, 2, **kwargs)

    def shaped(length, width):  # (N, L, E) with batch_first, else (L, N, E)
        return (
            torch.randn(2, length, width)
            if kwargs.get("batch_first")
            else torch.randn(length, 2, width)
        )

    q, key, value = shaped(5, 8), shaped(6, kwargs.get("kdim", 8)), shaped(6, kwargs.get("vdim", 8))
    mask = torch.rand(2, 6) > 0.7
    mask[:, 0] = False
    for extra in ({}, {"key_padding_mask": mask, "average_attn_weights": False}):
        with torch.no_grad():
            expected = t(q, key, value, **extra)
        extra = {n: kael.tensor(v.numpy()) if torch.is_tensor(v) else v for n, v in extra.items()}
        _close(k(kael.tensor(q), kael.tensor(key), kael.tensor(value), **extra), expected)


def test_multihead_attention_refuses_heads_that_do_not_divide_the_width():
    with pytest.raises(kael.ValueError, match="divisible by num_heads"):
        nn.MultiheadAttention(10, 3)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_layers_and_stacks_match_torch(norm_first):
    settings = {"dim_feedforward": 16, "norm_first": norm_first, "activation": "gelu"}
    k, t = _pair("TransformerEncoderLayer", 8, 2, batch_first=True, **settings)
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        expected = t(x)
    _close(k(kael.tensor(x)), expected)
    k, t = _pair("Transformer", 8, 2, 2, 2, **settings)
    src, tgt = torch.randn(5, 2, 8), torch.randn(4, 2, 8)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(
        nn.Transformer.generate_square_subsequent_mask(4).numpy(), causal.numpy()
    )
    with torch.no_grad():
        expected = t(src, tgt, tgt_mask=causal)
    got = k(kael.tensor(src), kael.tensor(tgt), tgt_mask=kael.tensor(causal.numpy()))
    _close(got, expected, tol=2e-5)


def test_a_transformer_stack_repr_groups_equal_layers_as_torch():
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16)
    expected = repr(torch.nn.TransformerEncoder(layer, 3, enable_nested_tensor=False))
    got = repr(nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 3))
    assert got == expected and "(0-2): 3 x TransformerEncoderLayer(" in got


def test_a_compiled_encoder_layer_matches_eager():
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).eval()
    x = kael.randn(2, 5, 8)
    same(kael.compile(layer)(x), torch.from_numpy(layer(x).numpy()))


def _raised(module, *inputs) -> str:
    with pytest.raises(RuntimeError) as got:  # kael.ValueError is a kael.Error, a RuntimeError
        module(*inputs)
    return str(got.value)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_recurrent_names_an_input_of_the_wrong_size_as_torch(name):
    k, t = _pair(name, 3, 5)
    for shape in ((4, 2, 4), (4, 4)):
        expected = _raised(t, torch.ones(shape))
        assert _raised(k, kael.ones(shape)) == expected
    # a packed sequence too (torch's GRU and RNN check it; its LSTM runs on, unchecked)
    packed = nn.utils.rnn.pack_sequence([kael.ones(4, 4)])
    assert _raised(k, packed) == expected


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
@pytest.mark.parametrize(("x_shape", "h_shape"), [((4, 2, 3), (1, 5)), ((4, 3), (1, 2, 5))])
def test_recurrent_refuses_a_state_of_the_other_rank_as_torch(name, x_shape, h_shape):
    k, t = _pair(name, 3, 5)

    def state(lib):
        h = lib.ones(h_shape)
        return (h, lib.ones(h_shape)) if name == "LSTM" else h

    expected = _raised(t, torch.ones(x_shape), state(torch))
    with pytest.raises(kael.ValueError) as got:
        k(kael.ones(x_shape), state(kael))
    assert str(got.value) == expected


@pytest.mark.parametrize(
    ("name", "kwargs", "state", "message"),
    [
        ("LSTM", {"proj_size": 2}, [(1, 2, 6), (1, 2, 6)], r"Expected hidden\[0\] size \(1, 2, 2\), got \[1, 2, 6\]"),
        ("LSTM", {"proj_size": 2}, [(1, 2, 2), (1, 2, 2)], r"Expected hidden\[1\] size \(1, 2, 6\), got \[1, 2, 2\]"),
        ("LSTM", {"num_layers": 2}, [(1, 2, 6), (2, 2, 6)], r"Expected hidden\[0\] size \(2, 2, 6\), got \[1, 2, 6\]"),
        ("GRU", {}, [(1, 2, 5)], r"Expected hidden size \(1, 2, 6\), got \[1, 2, 5\]"),
        ("RNN", {"bidirectional": True}, [(1, 2, 6)], r"Expected hidden size \(2, 2, 6\), got \[1, 2, 6\]"),
    ],
)  # fmt: skip
def test_recurrent_checks_the_states_shape_as_torch(name, kwargs, state, message):
    """A state of the wrong size is named as torch's check_forward_args names it (with a
    projection, an LSTM's h0 has proj_size features: not a wrong parameter count)."""
    module = getattr(nn, name)(4, 6, **kwargs)
    states = [kael.zeros(s) for s in state]
    hx = tuple(states) if name == "LSTM" else states[0]
    with pytest.raises(RuntimeError, match=message):
        getattr(torch.nn, name)(4, 6, **kwargs)(
            torch.randn(3, 2, 4),
            tuple(torch.zeros(s) for s in state) if name == "LSTM" else torch.zeros(state[0]),
        )
    with pytest.raises(kael.ValueError, match=message):
        module(kael.randn(3, 2, 4), hx)


@pytest.mark.parametrize("name", ["RNN", "GRU", "LSTM"])
def test_recurrent_refuses_no_input_features_and_has_torchs_weight_helpers(name):
    with pytest.raises(ValueError):
        getattr(torch.nn, name)(0, 3)
    with pytest.raises(kael.ValueError, match="input_size must be a positive integer, got 0"):
        getattr(nn, name)(0, 3)
    module, reference = (
        getattr(nn, name)(4, 6, 2, bidirectional=True),
        getattr(torch.nn, name)(4, 6, 2, bidirectional=True),
    )
    assert module.flatten_parameters() is None
    assert [[tuple(w.shape) for w in layer] for layer in module.all_weights] == [
        [tuple(w.shape) for w in layer] for layer in reference.all_weights
    ]
    assert module.all_weights[1][0] is module.weight_ih_l0_reverse


def _encoders(**options):
    """The same two-layer encoder (with a final norm) in both libraries, in eval."""
    layer = {"dim_feedforward": 32, "dropout": 0.0, "batch_first": True, **options}
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's nested-tensor warnings
        t = torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(16, **layer), 2, norm=torch.nn.LayerNorm(16)
        ).eval()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        k = kael.nn.TransformerEncoder(
            kael.nn.TransformerEncoderLayer(16, **layer), 2, norm=kael.nn.LayerNorm(16)
        ).eval()
    k.load_state_dict({n: kael.tensor(v.detach().numpy()) for n, v in t.state_dict().items()})
    return k, t, [str(w.message) for w in said]


ENCODER_OPTIONS = {
    "nested": {"nhead": 4},
    "gelu": {"nhead": 4, "activation": "gelu"},
    "odd heads": {"nhead": 1},
    "norm first": {"nhead": 4, "norm_first": True},
    "sequence first": {"nhead": 4, "batch_first": False},
}


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("mask", ["right padded", "not left aligned", "additive"])
@pytest.mark.parametrize("options", list(ENCODER_OPTIONS))
def test_encoder_padded_positions_are_zeros_where_torch_takes_its_nested_path(options, mask, grad):
    k, t, said = _encoders(**ENCODER_OPTIONS[options])
    nested = options in ("nested", "gelu")
    assert k.use_nested_tensor is t.use_nested_tensor is nested
    assert bool(said) is not nested and all("use_nested_tensor is False because" in w for w in said)
    padding = np.zeros((3, 7), bool)
    padding[1, 4:] = padding[2, 6:] = True
    if mask == "not left aligned":
        padding[0, 2] = True
    padding = padding.astype(np.float32) * -1e9 if mask == "additive" else padding
    x = np.random.default_rng(0).standard_normal((3, 7, 16)).astype(np.float32)
    if not ENCODER_OPTIONS[options].get("batch_first", True):
        x = np.ascontiguousarray(x.transpose(1, 0, 2))
    with torch.set_grad_enabled(grad), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = t(torch.from_numpy(x), src_key_padding_mask=torch.from_numpy(padding)).detach()
    with kael.set_grad_enabled(grad):
        got = k(kael.tensor(x), src_key_padding_mask=kael.tensor(padding))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
