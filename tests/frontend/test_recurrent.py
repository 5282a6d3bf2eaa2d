"""torch.rnn_tanh_cell / rnn_relu_cell / lstm_cell / gru_cell and torch.rnn_tanh / rnn_relu /
lstm / gru against PyTorch: the cells over dtypes, layouts and biases; the sequence
functions against nn.RNN / nn.LSTM / nn.GRU modules' forward with their _flat_weights
(layers, directions, batch_first, proj_size, dropout); the argument checks."""

import pytest
import torch
import torch.nn as nn
from parity_helpers import close_to_torch, refused_changed, setter
from recurrent_helpers import MODULES, TOL

import kael

# torch's own note that its oneDNN path has no LSTM projections
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections")

GATES = {"rnn_tanh_cell": 1, "rnn_relu_cell": 1, "lstm_cell": 4, "gru_cell": 3}


def K(t):
    """A kael tensor over a copy of torch tensor t (other values as they are)."""
    return kael.from_dlpack(t.detach().clone()) if isinstance(t, torch.Tensor) else t


def kael_args(args):
    """args with torch tensors (also inside tuples and lists) as kael tensors."""
    return [type(a)(K(t) for t in a) if isinstance(a, tuple | list) else K(a) for a in args]


def randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def cell_args(name, batch=2, size=3, hidden=4, dtype=torch.float32, biases=(True, True)):
    """(input, hx, w_ih, w_hh, b_ih, b_hh) for the cell `name` (a missing bias is None)."""
    rows = GATES[name] * hidden
    h = randn(batch, hidden, dtype=dtype, seed=2)
    hx = (h, randn(batch, hidden, dtype=dtype, seed=3)) if name == "lstm_cell" else h
    b_ih, b_hh = (randn(rows, dtype=dtype, seed=s) if b else None for s, b in zip((6, 7), biases))
    x = randn(batch, size, dtype=dtype, seed=1)
    w_ih, w_hh = randn(rows, size, dtype=dtype, seed=4), randn(rows, hidden, dtype=dtype, seed=5)
    return [x, hx, w_ih, w_hh, b_ih, b_hh]


def both_cells(name, args):
    """(kael's result, torch's) of the cell `name` on args."""
    return getattr(kael, name)(*kael_args(args)), getattr(torch, name)(*args)


# ---- cells -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(GATES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("biases", [(True, True), (False, False), (True, False), (False, True)])
def test_cell_values_match_torch(name, dtype, biases):
    close_to_torch(*both_cells(name, cell_args(name, dtype=dtype, biases=biases)), TOL[dtype])


def _laid_out(t: torch.Tensor, layout: str) -> torch.Tensor:
    """t's values as a non-contiguous view: transposed storage, every other column, or a
    row expanded over the batch."""
    if layout == "transposed":
        return t.t().contiguous().t()
    if layout == "sliced":
        return torch.stack([t, t + 1], -1).reshape(t.shape[0], -1)[:, ::2]
    return t[:1].expand(*t.shape)


@pytest.mark.parametrize("name", list(GATES))
@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded"])
def test_cell_non_contiguous_operands_match_torch(name, layout):
    args = cell_args(name)
    args[0] = _laid_out(args[0], layout)
    args[2] = _laid_out(args[2], layout)
    hx = args[1]
    args[1] = (
        tuple(_laid_out(h, layout) for h in hx) if isinstance(hx, tuple) else _laid_out(hx, layout)
    )
    close_to_torch(*both_cells(name, args), 1e-5)


@pytest.mark.parametrize("name", list(GATES))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cell_half_types_keep_their_dtype(name, dtype):
    close_to_torch(*both_cells(name, cell_args(name, dtype=dtype)), TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_integer_rnn_cells_as_torch(dtype):
    """tanh of integer gates is float32 (the default dtype), relu's stays integral."""
    for name in ("rnn_tanh_cell", "rnn_relu_cell"):
        args = [(a * 2).round().to(dtype) if a is not None else None for a in cell_args(name)]
        close_to_torch(*both_cells(name, args), 1e-6)


@pytest.mark.parametrize("name", ["lstm_cell", "gru_cell"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.bool])
def test_integer_gated_cells_are_refused(name, dtype):
    args = cell_args(name)
    args = [
        tuple(h.to(dtype) for h in a) if isinstance(a, tuple) else a.to(dtype) for a in args[:4]
    ]
    with pytest.raises((RuntimeError, NotImplementedError)):
        getattr(torch, name)(*args)
    with pytest.raises(kael.TypeError, match=str(K(args[0]).dtype)):
        getattr(kael, name)(*kael_args(args))


@pytest.mark.parametrize("name", list(GATES))
@pytest.mark.parametrize("batch,size", [(0, 3), (2, 0)])
def test_empty_batch_or_input_size(name, batch, size):
    close_to_torch(*both_cells(name, cell_args(name, batch=batch, size=size)), 1e-5)


def test_unbatched_cell_input_is_refused_as_torch():
    """At torch.NAME level the cells take [N, input_size] only (nn.RNNCell unsqueezes)."""
    args = cell_args("rnn_tanh_cell")
    args[0], args[1] = args[0][0], args[1][0]
    with pytest.raises(IndexError):
        torch.rnn_tanh_cell(*args)
    with pytest.raises(kael.IndexError, match=r"2 dimensions, got \[3\]"):
        kael.rnn_tanh_cell(*kael_args(args))


def _cell_error(name, change, torch_error, kael_error, match):
    """torch and kael both refuse the cell arguments `change` makes."""
    refused_changed(name, cell_args(name), change, kael_args, torch_error, kael_error, match)


CELL_ERRORS = {
    "input_3d": (
        lambda a: a.__setitem__(0, randn(2, 3, 3)),
        ValueError,
        r"input to have 2 dimensions, got \[2, 3, 3\]",
    ),
    "input_size": (
        lambda a: a.__setitem__(0, randn(2, 5)),
        ValueError,
        "inconsistent input_size: got 5 expected 3",
    ),
    "hidden_size": (
        lambda a: a.__setitem__(1, randn(2, 5)),
        ValueError,
        "hidden0 has inconsistent hidden_size: got 5, expected 4",
    ),
    "batch": (
        lambda a: a.__setitem__(1, randn(3, 4)),
        ValueError,
        "Input batch size 2 doesn't match hidden0 batch size 3",
    ),
    "w_ih_rows": (
        lambda a: a.__setitem__(2, randn(5, 3)),
        ValueError,
        "weight_ih first dim must be 1 \\* hidden_size = 4, but got 5",
    ),
    "w_hh_rows": (
        lambda a: a.__setitem__(3, randn(5, 4)),
        ValueError,
        "weight_hh first dim must be 1 \\* hidden_size = 4, but got 5",
    ),
    "bias": (
        lambda a: a.__setitem__(4, randn(5)),
        ValueError,
        r"b_ih of shape \[4\], got \[5\]",
    ),
    "input_dtype": (
        lambda a: a.__setitem__(0, a[0].double()),
        TypeError,
        "input is float64 and hx\\[0\\] is float32",
    ),
    "weight_dtype": (
        lambda a: a.__setitem__(2, a[2].double()),
        TypeError,
        "input is float32 and w_ih is float64",
    ),
    "input_not_tensor": (
        lambda a: a.__setitem__(0, [1.0, 2.0, 3.0]),
        TypeError,
        "argument 'input' must be Tensor, not list",
    ),
}


@pytest.mark.parametrize("case", list(CELL_ERRORS))
def test_bad_cell_arguments_raise_typed_errors(case):
    change, error, match = CELL_ERRORS[case]
    torch_error = TypeError if case == "input_not_tensor" else RuntimeError
    _cell_error("rnn_tanh_cell", change, torch_error, getattr(kael, error.__name__), match)


@pytest.mark.parametrize("hx_count", [1, 3])
def test_lstm_cell_needs_two_hidden_states(hx_count):
    args = cell_args("lstm_cell")
    args[1] = (args[1][0],) * hx_count
    with pytest.raises(RuntimeError, match="two hidden states"):
        torch.lstm_cell(*args)
    with pytest.raises(kael.ValueError, match=f"expects two hidden states, got {hx_count}"):
        kael.lstm_cell(*kael_args(args))


def test_lstm_cell_hx_must_be_a_tuple():
    args = cell_args("lstm_cell")
    args[1] = args[1][0]
    with pytest.raises(TypeError):
        torch.lstm_cell(*args)
    with pytest.raises(kael.TypeError, match="tuple of Tensors, not Tensor"):
        kael.lstm_cell(*kael_args(args))


def test_lstm_cell_second_state_checked():
    args = cell_args("lstm_cell")
    args[1] = (args[1][0], randn(2, 5))
    with pytest.raises(RuntimeError, match="hidden1"):
        torch.lstm_cell(*args)
    with pytest.raises(kael.ValueError, match="hidden1 has inconsistent hidden_size: got 5"):
        kael.lstm_cell(*kael_args(args))


# ---- whole sequences -------------------------------------------------------------------------


def module(name, size=3, hidden=4, dtype=torch.float32, **kwargs):
    """A seeded nn.RNN / nn.LSTM / nn.GRU for the sequence function `name`."""
    torch.manual_seed(0)
    return MODULES[name](size, hidden, **kwargs).to(dtype)


def initial(m, batch, dtype, seed=8):
    """Non-zero (h0,) or (h0, c0) for module m."""
    layers = m.num_layers * (2 if m.bidirectional else 1)
    h0 = randn(layers, batch, m.proj_size or m.hidden_size, dtype=dtype, seed=seed)
    c0 = randn(layers, batch, m.hidden_size, dtype=dtype, seed=seed + 1)
    return (h0, c0) if isinstance(m, nn.LSTM) else h0


def call(name, m, x, hx, dropout=0.0, train=False):
    """kael.NAME on the module's flat weights and flags, the sequence function's arguments
    in torch's order."""
    flags = (m.bias, m.num_layers, dropout, train, m.bidirectional, m.batch_first)
    return getattr(kael, name)(*kael_args([x, hx, m._flat_weights]), *flags)


def expected(m, x, hx):
    """The module's forward as (output, h_n[, c_n])."""
    with torch.no_grad():
        out, state = m(x, hx)
    return (out, *state) if isinstance(state, tuple) else (out, state)


def sequence_case(name, dtype=torch.float32, batch=2, steps=4, **kwargs):
    m = module(name, dtype=dtype, **kwargs)
    shape = (batch, steps, 3) if m.batch_first else (steps, batch, 3)
    x = randn(*shape, dtype=dtype, seed=9)
    hx = initial(m, batch, dtype)
    return call(name, m, x, hx), expected(m, x, hx)


@pytest.mark.parametrize("name", list(MODULES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_sequence_matches_module_forward(name, dtype, num_layers, bidirectional, batch_first):
    k, t = sequence_case(
        name,
        dtype,
        num_layers=num_layers,
        bidirectional=bidirectional,
        batch_first=batch_first,
    )
    close_to_torch(k, t, TOL[dtype])
    # batch_first's output is torch's [T, N, D H] result read batch first
    assert k[0].stride() == t[0].stride()


@pytest.mark.parametrize("name", list(MODULES))
def test_sequence_without_biases(name):
    close_to_torch(*sequence_case(name, bias=False, num_layers=2), 1e-5)


@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_lstm_projection_weights(num_layers, bidirectional, bias):
    """proj_size: h = (o * tanh(c)) @ w_hr^T, h0 of the projection's size, w_hr in params."""
    k, t = sequence_case(
        "lstm", num_layers=num_layers, bidirectional=bidirectional, bias=bias, proj_size=2
    )
    close_to_torch(k, t, 1e-5)


@pytest.mark.parametrize("name", list(MODULES))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_sequence_half_types(name, dtype):
    k, t = sequence_case(name, dtype, num_layers=2, bidirectional=True)
    close_to_torch(k, t, 4 * TOL[dtype])


@pytest.mark.parametrize("name", list(MODULES))
@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_sequence_non_contiguous_input(name, layout):
    m = module(name, bidirectional=True)
    base = randn(2, 5, 6, seed=9)  # read [N, T, 2 * H_in] as [T, N, H_in]
    x = base.transpose(0, 1)[..., :3] if layout == "transposed" else base[..., ::2].transpose(0, 1)
    hx = initial(m, 2, torch.float32)
    close_to_torch(call(name, m, x, hx), expected(m, x, hx), 1e-5)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_integer_relu_sequence_as_torch(dtype):
    m = module("rnn_relu", num_layers=2)
    params = [(p * 3).round().to(dtype) for p in m._flat_weights]
    x = (randn(3, 2, 3, seed=9) * 2).round().to(dtype)
    hx = torch.zeros(2, 2, 4, dtype=dtype)
    flags = (True, 2, 0.0, False, False, False)
    t = torch.rnn_relu(x, hx, params, *flags)
    close_to_torch(kael.rnn_relu(*kael_args([x, hx, params]), *flags), t, 0)


@pytest.mark.parametrize("name", ["rnn_tanh", "lstm", "gru"])
def test_integer_sequences_refused_elsewhere(name):
    m = module(name)
    params = [p.round().long() for p in m._flat_weights]
    x, hx = torch.ones(3, 2, 3, dtype=torch.long), initial(m, 2, torch.float32)
    hx = tuple(h.long() for h in hx) if isinstance(hx, tuple) else hx.long()
    flags = (True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError):
        getattr(torch, name)(x, hx, params, *flags)
    with pytest.raises(kael.TypeError, match="floating point input, got int64"):
        getattr(kael, name)(*kael_args([x, hx, params]), *flags)


@pytest.mark.parametrize("name", list(MODULES))
def test_empty_batch_gives_empty_outputs(name):
    close_to_torch(*sequence_case(name, batch=0, num_layers=2, bidirectional=True), 0)


@pytest.mark.parametrize("name", list(MODULES))
def test_single_step_sequence(name):
    close_to_torch(*sequence_case(name, steps=1, bidirectional=True), 1e-5)


def test_empty_sequence_is_refused_as_torch():
    m = module("gru")
    x, hx = torch.zeros(0, 2, 3), initial(m, 2, torch.float32)
    with pytest.raises(RuntimeError, match="sequence length"):
        torch.gru(x, hx, m._flat_weights, True, 1, 0.0, False, False, False)
    with pytest.raises(kael.ValueError, match=r"larger than 0 in RNN, got input \[0, 2, 3\]"):
        call("gru", m, x, hx)


def test_unbatched_sequence_is_refused_as_torch():
    """torch.NAME takes 3-D inputs only (nn.GRU unsqueezes an unbatched one itself)."""
    m = module("gru")
    x, hx = randn(4, 3), initial(m, 1, torch.float32)[:, 0]
    with pytest.raises(IndexError):
        torch.gru(x, hx, m._flat_weights, True, 1, 0.0, False, False, False)
    with pytest.raises(kael.IndexError, match=r"input to have 3 dimensions, got \[4, 3\]"):
        call("gru", m, x, hx)


# ---- dropout between layers ------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MODULES))
def test_dropout_ignored_when_not_training(name):
    m = module(name, num_layers=2)
    x, hx = randn(4, 2, 3, seed=9), initial(m, 2, torch.float32)
    close_to_torch(call(name, m, x, hx, dropout=0.5, train=False), expected(m, x, hx), 1e-5)


@pytest.mark.parametrize("name", list(MODULES))
def test_full_dropout_zeroes_the_second_layers_input(name):
    """p = 1 drops every output of layer 0: deterministic, so compared with torch's values."""
    m = module(name, num_layers=2, bidirectional=True)
    x, hx = randn(4, 2, 3, seed=9), initial(m, 2, torch.float32)
    flags = (True, 2, 1.0, True, True, False)
    t = getattr(torch, name)(x, hx, m._flat_weights, *flags)
    close_to_torch(getattr(kael, name)(*kael_args([x, hx, m._flat_weights]), *flags), t, 1e-5)


def test_dropout_changes_only_later_layers():
    m = module("lstm", num_layers=2)
    x, hx = randn(6, 3, 3, seed=9), initial(m, 3, torch.float32)
    plain = call("lstm", m, x, hx)
    noisy = call("lstm", m, x, hx, dropout=0.5, train=True)
    assert [o.shape for o in noisy] == [o.shape for o in plain] == [(6, 3, 4), (2, 3, 4), (2, 3, 4)]
    first = [kael.allclose(a[0], b[0]) for a, b in zip(noisy[1:], plain[1:])]
    second = [kael.allclose(a[1], b[1]) for a, b in zip(noisy[1:], plain[1:])]
    assert first == [True, True] and second == [False, False]


@pytest.mark.parametrize("p,layers,refused", [(1.5, 2, True), (-0.1, 2, True), (1.5, 1, False)])
def test_dropout_probability_checked_where_used(p, layers, refused):
    """PyTorch checks p only where dropout runs: between layers, when training."""
    m = module("gru", num_layers=layers)
    x, hx = randn(3, 2, 3, seed=9), initial(m, 2, torch.float32)
    flags = (True, layers, p, True, False, False)
    if not refused:
        t = torch.gru(x, hx, m._flat_weights, *flags)
        close_to_torch(kael.gru(*kael_args([x, hx, m._flat_weights]), *flags), t, 1e-5)
        return
    with pytest.raises(RuntimeError, match="dropout probability"):
        torch.gru(x, hx, m._flat_weights, *flags)
    with pytest.raises(kael.ValueError, match=f"between 0 and 1, but got {p}"):
        kael.gru(*kael_args([x, hx, m._flat_weights]), *flags)


# ---- sequence argument checks ----------------------------------------------------------------


def _sequence_error(name, change, torch_error, kael_error, match, **kwargs):
    """torch and kael both refuse the sequence arguments `change` makes (a list of input,
    hx, params and the six flags, for a module of `kwargs`)."""
    m = module(name, **kwargs)
    args = [randn(4, 2, 3, seed=9), initial(m, 2, torch.float32), list(m._flat_weights)]
    args += [m.bias, m.num_layers, 0.0, False, m.bidirectional, False]
    refused_changed(name, args, change, kael_args, torch_error, kael_error, match)


SEQUENCE_ERRORS = {
    "too_few_params": (
        setter(2, lambda a: a[2][:3]),
        kael.ValueError,
        "incorrect number of RNN parameters: expected 4, got 3",
    ),
    "layers_without_params": (
        setter(4, 2),
        kael.ValueError,
        r"expected hx\[0\] of shape \[2, 2, 4\], got \[1, 2, 4\]",
    ),
    "hx_batch": (
        setter(1, randn(1, 3, 4)),
        kael.ValueError,
        r"expected hx\[0\] of shape \[1, 2, 4\], got \[1, 3, 4\]",
    ),
    "hx_layers": (
        setter(1, randn(2, 2, 4)),
        kael.ValueError,
        r"expected hx\[0\] of shape \[1, 2, 4\], got \[2, 2, 4\]",
    ),
    "input_size": (
        setter(0, randn(4, 2, 5)),
        kael.ValueError,
        r"weight_ih_l0 \(params\[0\]\) of shape \[12, 5\], got \[12, 3\]",
    ),
    "weight_rows": (
        setter(2, lambda a: [a[2][0][:9], *a[2][1:]]),
        kael.ValueError,
        r"weight_ih_l0 \(params\[0\]\) of shape \[12, 3\], got \[9, 3\]",
    ),
    "bias_size": (
        setter(2, lambda a: [*a[2][:3], a[2][3][:9]]),
        kael.ValueError,
        r"bias_hh_l0 \(params\[3\]\) of shape \[12\], got \[9\]",
    ),
    "input_dtype": (
        setter(0, lambda a: a[0].double()),
        kael.TypeError,
        r"input is float64 and hx\[0\] is float32",
    ),
    "param_dtype": (
        setter(2, lambda a: [p.double() for p in a[2]]),
        kael.TypeError,
        r"input is float32 and params\[0\] is float64",
    ),
    "input_4d": (
        setter(0, randn(2, 4, 2, 3)),
        kael.ValueError,
        r"input to have 3 dimensions, got \[2, 4, 2, 3\]",
    ),
}


@pytest.mark.parametrize("case", list(SEQUENCE_ERRORS))
def test_bad_sequence_arguments_raise_typed_errors(case):
    change, error, match = SEQUENCE_ERRORS[case]
    _sequence_error("gru", change, RuntimeError, error, match)


def test_hidden_states_counted_against_num_layers():
    """Two layers' params with num_layers 1: PyTorch refuses the surplus too."""
    _sequence_error(
        "gru",
        setter(2, lambda a: a[2] + a[2][:4]),
        RuntimeError,
        kael.ValueError,
        "expected 4, got 8",
    )


@pytest.mark.parametrize("count", [1, 3])
def test_lstm_needs_two_hidden_states(count):
    _sequence_error(
        "lstm",
        setter(1, lambda a: (a[1][0],) * count),
        RuntimeError,
        kael.ValueError,
        f"lstm expects two hidden states, got {count}",
    )


def test_lstm_cell_state_size_checked():
    _sequence_error(
        "lstm",
        setter(1, lambda a: (a[1][0], randn(1, 2, 5))),
        RuntimeError,
        kael.ValueError,
        "incorrect number of RNN parameters",
    )


def test_packed_overload_runs_as_torch():
    """torch.gru(data, batch_sizes, hx, params, ...) runs packed sequences (more in
    test_packed_sequences.py)."""
    m = module("gru")
    data, sizes, hx = randn(5, 3), torch.tensor([2, 2, 1]), initial(m, 2, torch.float32)
    args = [data, sizes, hx, m._flat_weights, True, 1, 0.0, False, False]
    close_to_torch(kael.gru(*kael_args(args)), torch.gru(*args), 1e-5)


def test_packed_lstm_overload_runs_as_torch():
    m = module("lstm")
    hx = initial(m, 2, torch.float32)
    args = [randn(5, 3), torch.tensor([2, 2, 1]), hx, m._flat_weights, True, 1, 0.0, False, False]
    close_to_torch(kael.lstm(*kael_args(args)), torch.lstm(*args), 1e-5)


def test_packed_sequence_input_is_refused():
    m = module("rnn_tanh")
    packed = nn.utils.rnn.pack_padded_sequence(randn(4, 2, 3), [4, 3])
    flags = (True, 1, 0.0, False, False, False)
    hx = K(initial(m, 2, torch.float32))
    with pytest.raises(kael.TypeError, match="argument 'input' must be Tensor, not PackedSequence"):
        kael.rnn_tanh(packed, hx, kael_args([m._flat_weights])[0], *flags)


@pytest.mark.parametrize("layers", [0, -1])
def test_num_layers_must_be_positive(layers):
    """PyTorch fails deep inside (an empty stack) at 0; kael names the value."""
    x, hx = K(randn(4, 2, 3)), K(torch.zeros(0, 2, 4))
    with pytest.raises(RuntimeError):
        torch.rnn_relu(randn(4, 2, 3), torch.zeros(0, 2, 4), [], True, 0, 0.0, False, False, False)
    with pytest.raises(kael.ValueError, match=f"num_layers must be a positive int, got {layers}"):
        kael.rnn_relu(x, hx, [], True, layers, 0.0, False, False, False)


def test_sequence_works_under_compile():
    m = module("lstm", num_layers=2, bidirectional=True)
    x, hx = randn(4, 2, 3, seed=9), initial(m, 2, torch.float32)
    params = kael_args([m._flat_weights])[0]
    fn = kael.compile(
        lambda a, h, c: kael.lstm(a, (h, c), params, True, 2, 0.0, False, True, False)
    )
    close_to_torch(fn(*kael_args([x, *hx])), expected(m, x, hx), 1e-5)


@pytest.mark.parametrize(
    "params,match",
    [
        (None, "argument 'params' must be a list of Tensors, not NoneType"),
        ("w", "argument 'params' must be a list of Tensors, not str"),
        ([1.0, 2.0, 3.0, 4.0], r"argument 'params\[0\]' must be Tensor, not float"),
    ],
)
def test_params_must_be_a_list_of_tensors(params, match):
    x, hx = randn(4, 2, 3), torch.zeros(1, 2, 4)
    with pytest.raises(TypeError):
        torch.gru(x, hx, params, True, 1, 0.0, False, False, False)
    with pytest.raises(kael.TypeError, match=match):
        kael.gru(K(x), K(hx), params, True, 1, 0.0, False, False, False)


def test_cell_bias_must_be_a_tensor():
    args = cell_args("gru_cell")
    args[4] = [0.0] * 12
    with pytest.raises(TypeError):
        torch.gru_cell(*args)
    with pytest.raises(kael.TypeError, match="argument 'b_ih' must be Tensor, not list"):
        kael.gru_cell(*kael_args(args[:4]), args[4])


def test_cells_take_keywords():
    x, (h, c), w_ih, w_hh, b_ih, b_hh = cell_args("lstm_cell")
    t = torch.lstm_cell(x, (h, c), w_ih, w_hh, b_ih=b_ih, b_hh=b_hh)
    k = kael.lstm_cell(K(x), (K(h), K(c)), K(w_ih), K(w_hh), b_ih=K(b_ih), b_hh=K(b_hh))
    close_to_torch(k, t, 1e-5)
