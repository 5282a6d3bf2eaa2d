"""Recurrent layers as PyTorch has them at torch.NAME: the cells (rnn_tanh_cell, lstm_cell,
gru_cell, ...) and the whole-sequence functions nn.RNN, nn.LSTM and nn.GRU call (torch.lstm,
torch.gru, ...), padded or packed, on kael's matmul and fused elementwise ops.

A sequence's input projection (x @ w_ih^T + b_ih) is one matmul over all time steps; each
step is then one matmul (h @ w_hh^T + b_hh) and one or two fused kernels of gate math that
write the new hidden state straight into the output. Gate orders are PyTorch's: LSTM i, f,
g, o; GRU r, z, n with r applied to (W_hn h + b_hn). A packed sequence's step t runs only its
first batch_sizes[t] rows: rows whose sequence has ended keep their last state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import NamedTuple

from kael.frontend import autocast, blas_like, index_ops, linalg
from kael.frontend.formula import Value, launch, launch_many
from kael.frontend.outputs import tensor_param
from kael.frontend.random import dropout as _dropout
from kael.frontend.tensor import Tensor, empty_impl
from kael.frontend.tracing import op_door
from kael.frontend.views import narrowed, selected
from kael.ir import graph as g
from kael.runtime.dtypes import DType, bool_, float32, get_default_dtype, int64
from kael.runtime.errors import IndexError, TypeError, ValueError

# ---- the gate math of one step, each a fused kernel ------------------------------------------


class _Weights(NamedTuple):
    """One layer and direction's parameters (biases and the LSTM projection optional)."""

    w_ih: Tensor
    w_hh: Tensor
    b_ih: Tensor | None
    b_hh: Tensor | None
    w_hr: Tensor | None = None


def _linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """x @ w^T (+ b) as one matmul."""
    return linalg.matmul(x, w.t()) if b is None else blas_like.addmm(b, x, w.t())


def _fused(key: str, operands: list[Tensor], formula: Callable, dtype: DType, out) -> Tensor:
    """formula over the [N, H] operands as one kernel, in float32 for the half types, into
    `out` (a Tensor view, else a new tensor of `dtype`)."""
    compute = float32 if dtype.is_half else dtype
    if out is None and compute is dtype:  # launch makes the result (the fast door serves it)
        return launch(("recurrent", key), operands, compute, formula)
    target = empty_impl(operands[0].shape, dtype, operands[0].device) if out is None else out._impl
    return launch(("recurrent", key), operands, compute, formula, out=target)


def _chunks(gates: Tensor, count: int) -> list[Tensor]:
    """The `count` gates of [N, count * H] as [N, H] views (made directly: a step makes
    eight, and indexing's checks cost 1.6 us a view, 0.4 this way)."""
    impl = gates._impl
    size = impl.shape[1] // count
    return [Tensor.trusted(narrowed(impl, 1, k * size, size)) for k in range(count)]


def _rnn_step(activation: str) -> Callable:
    """The Elman step: h' = activation(x W_ih^T + b_ih + h W_hh^T + b_hh)."""

    def formula(a: Value, b: Value) -> Value:
        return (a + b).apply(activation)

    def step(xg: Tensor, hg: Tensor, state: tuple, weights: _Weights, dtype: DType, out):
        return (_fused(f"rnn_{activation}", [xg, hg], formula, dtype, out),)

    return step


def _cell_state(xi: Value, xf: Value, xg: Value, hi: Value, hf: Value, hg: Value, c: Value):
    """LSTM's c' = sigmoid(f) * c + sigmoid(i) * tanh(g)."""
    gate = (xi + hi).apply("sigmoid") * (xg + hg).apply("tanh")
    return (xf + hf).apply("sigmoid") * c + gate


def _cell_output(xo: Value, ho: Value, c: Value) -> Value:
    """LSTM's h' = sigmoid(o) * tanh(c')."""
    return (xo + ho).apply("sigmoid") * c.apply("tanh")


def _lstm_cell(dtype: DType) -> Callable:
    """The formula of LSTM's (c', h') in one kernel; a half dtype's c' is rounded to it before
    h' reads it, as torch's two steps round it."""

    def formula(xi, xf, xc, xo, hi, hf, hc, ho, c):
        c = _cell_state(xi, xf, xc, hi, hf, hc, c)
        stored = (
            c if not dtype.is_half else Value(g.Cast(c.node.dtype, (), g.Cast(dtype, (), c.node)))
        )
        return c, _cell_output(xo, ho, stored)

    return formula


def _lstm_step(xg: Tensor, hg: Tensor, state: tuple, weights: _Weights, dtype: DType, out):
    """LSTM's step: c' and h' by one kernel, h' projected by w_hr when there is one."""
    xi, xf, xc, xo = _chunks(xg, 4)
    hi, hf, hc, ho = _chunks(hg, 4)
    shape, device = state[1].shape, state[1].device
    c = Tensor(empty_impl(shape, dtype, device))
    h = (
        out
        if out is not None and weights.w_hr is None
        else Tensor(empty_impl(shape, dtype, device))
    )
    operands = [xi, xf, xc, xo, hi, hf, hc, ho, state[1]]
    compute = float32 if dtype.is_half else dtype
    launch_many(("lstm_cell",), operands, compute, _lstm_cell(dtype), [c, h])
    if weights.w_hr is None:
        return h, c
    if out is None:
        return linalg.matmul(h, weights.w_hr.t()), c
    return linalg.matmul(h, weights.w_hr.t(), out=out), c


def _gru_formula(xr: Value, xz: Value, xn: Value, hr: Value, hz: Value, hn: Value, h: Value):
    """GRU's h' = (h - n) * z + n, n = tanh(x_n + r * (W_hn h + b_hn)), as PyTorch's kernel."""
    n = (xn + (xr + hr).apply("sigmoid") * hn).apply("tanh")
    return (h - n) * (xz + hz).apply("sigmoid") + n


def _gru_step(xg: Tensor, hg: Tensor, state: tuple, weights: _Weights, dtype: DType, out):
    """GRU's step as one kernel."""
    return (_fused("gru", [*_chunks(xg, 3), *_chunks(hg, 3), state[0]], _gru_formula, dtype, out),)


def _same(dtype: DType) -> DType:
    return dtype


def _default_float(dtype: DType) -> DType:
    return get_default_dtype()


@dataclass(frozen=True)
class _Kind:
    """A recurrence: its gate count, its step, its state count and, where PyTorch accepts
    integer inputs, the result dtype of one."""

    gates: int
    step: Callable
    states: int = 1
    integer_result: Callable[[DType], DType] | None = None
    # whether the step only adds the two projections (b_hh can join the input projection,
    # made once for every step); GRU multiplies W_hn h + b_hn by r
    adds_projections: bool = True


_CELLS = {
    "rnn_tanh_cell": _Kind(1, _rnn_step("tanh"), integer_result=_default_float),
    "rnn_relu_cell": _Kind(1, _rnn_step("relu"), integer_result=_same),
    "lstm_cell": _Kind(4, _lstm_step, states=2),
    "gru_cell": _Kind(3, _gru_step, adds_projections=False),
}
# rnn_tanh's second step multiplies a float h by integer weights, which PyTorch refuses
_SEQUENCES = {
    "rnn_tanh": _Kind(1, _rnn_step("tanh")),
    "rnn_relu": _Kind(1, _rnn_step("relu"), integer_result=_same),
    "lstm": _Kind(4, _lstm_step, states=2),
    "gru": _Kind(3, _gru_step, adds_projections=False),
}

# ---- argument checks -------------------------------------------------------------------------


def _result_dtype(name: str, kind: _Kind, dtype: DType) -> DType:
    """The dtype of the hidden states the input's dtype gives; kael.TypeError where PyTorch
    has no kernel for it."""
    if dtype.is_floating_point:
        return dtype
    if dtype is bool_ or kind.integer_result is None:
        raise TypeError(f"{name}: expected a floating point input, got {dtype}")
    return kind.integer_result(dtype)


def _same_dtypes(name: str, x: Tensor, named: dict[str, Tensor | None]) -> None:
    """Every tensor of `named` has the input's dtype (PyTorch's matmuls refuse a mix)."""
    for what, t in named.items():
        if t is not None and t.dtype is not x.dtype:
            raise TypeError(
                f"{name}: mat1 and mat2 must have the same dtype, but input is {x.dtype} and"
                f" {what} is {t.dtype}"
            )


def _check_rank(name: str, what: str, t: Tensor, rank: int) -> None:
    """t has `rank` dims: kael.IndexError for fewer (PyTorch indexes a missing dim), else
    kael.ValueError."""
    if t.ndim != rank:
        error = IndexError if t.ndim < rank else ValueError
        raise error(f"{name}: expected {what} to have {rank} dimensions, got {list(t.shape)}")


def _check_shape(name: str, what: str, t: Tensor | None, shape: tuple[int, ...]) -> None:
    """t (when given) has exactly `shape`."""
    if t is not None and tuple(t.shape) != shape:
        raise ValueError(f"{name}: expected {what} of shape {list(shape)}, got {list(t.shape)}")


def _states(name: str, hx, count: int) -> tuple[Tensor, ...]:
    """The hidden state tensors: hx itself for one, a tuple or list of `count` otherwise."""
    if count == 1:
        return (tensor_param(hx, name, "hx"),)
    if isinstance(hx, Tensor) or not isinstance(hx, tuple | list):
        raise TypeError(
            f"{name}(): argument 'hx' must be tuple of Tensors, not {type(hx).__name__}"
        )
    if len(hx) != count:
        raise ValueError(f"{name} expects two hidden states, got {len(hx)}")
    return tuple(tensor_param(h, name, "hx") for h in hx)


# ---- the cells -------------------------------------------------------------------------------


def _check_cell_weights(name: str, kind: _Kind, weights: _Weights) -> int:
    """PyTorch's cell weight checks; the hidden size (w_hh's second dim)."""
    for what in ("w_ih", "w_hh"):
        _check_rank(name, what, getattr(weights, what), 2)
    hidden = weights.w_hh.shape[1]
    for what in ("ih", "hh"):
        rows = getattr(weights, f"w_{what}").shape[0]
        if rows != kind.gates * hidden:
            raise ValueError(
                f"weight_{what} first dim must be {kind.gates} * hidden_size ="
                f" {kind.gates * hidden}, but got {rows}"
            )
        _check_shape(name, f"b_{what}", getattr(weights, f"b_{what}"), (kind.gates * hidden,))
    return hidden


def _check_cell_inputs(name: str, x: Tensor, states: tuple, weights: _Weights, hidden: int):
    """PyTorch's checks of a cell's input [N, input_size] and hidden states [N, hidden]."""
    _check_rank(name, "input", x, 2)
    if x.shape[1] != weights.w_ih.shape[1]:
        raise ValueError(
            f"input has inconsistent input_size: got {x.shape[1]} expected {weights.w_ih.shape[1]}"
        )
    for i, h in enumerate(states):
        _check_rank(name, f"hidden{i}", h, 2)
        if h.shape[0] != x.shape[0]:
            raise ValueError(
                f"Input batch size {x.shape[0]} doesn't match hidden{i} batch size {h.shape[0]}"
            )
        if h.shape[1] != hidden:
            raise ValueError(
                f"hidden{i} has inconsistent hidden_size: got {h.shape[1]}, expected {hidden}"
            )


def _cell(name: str, input, hx, w_ih, w_hh, b_ih, b_hh) -> tuple[Tensor, ...]:
    """One step of the cell `name`: its new hidden state(s)."""
    kind = _CELLS[name]
    x = tensor_param(input, name, "input")
    states = _states(name, hx, kind.states)
    biases = (
        None if b is None else tensor_param(b, name, what)
        for b, what in ((b_ih, "b_ih"), (b_hh, "b_hh"))
    )
    weights = _Weights(tensor_param(w_ih, name, "w_ih"), tensor_param(w_hh, name, "w_hh"), *biases)
    dtype = _result_dtype(name, kind, x.dtype)
    _same_dtypes(name, x, {**{f"hx[{i}]": h for i, h in enumerate(states)}, **weights._asdict()})
    hidden = _check_cell_weights(name, kind, weights)
    _check_cell_inputs(name, x, states, weights, hidden)
    xg, hg = _linear(x, w_ih, b_ih), _linear(states[0], w_hh, b_hh)
    return kind.step(xg, hg, states, weights, dtype, None)


def _cell_function(name: str, doc: str) -> Callable:
    """torch.NAME for a cell of one hidden state: its new hidden state."""

    def cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None) -> Tensor:
        return _cell(name, input, hx, w_ih, w_hh, b_ih, b_hh)[0]

    cell.__name__ = cell.__qualname__ = name
    cell.__doc__ = doc
    return cell


def lstm_cell(
    input: Tensor, hx: Sequence[Tensor], w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None
) -> tuple[Tensor, Tensor]:
    """torch.lstm_cell: (h', c') from hx = (h, c), x [N, input_size], gates i, f, g, o."""
    h, c = _cell("lstm_cell", input, hx, w_ih, w_hh, b_ih, b_hh)
    return h, c


# ---- the whole-sequence functions ------------------------------------------------------------


@dataclass(frozen=True)
class _Stack:
    """A stacked recurrence's layout: sizes, layers and directions."""

    input_size: int
    hidden: int  # the gates' hidden size (c's size for LSTM)
    output: int  # h's size: hidden, or the LSTM projection's
    layers: int
    directions: int
    has_biases: bool

    @property
    def projected(self) -> bool:
        return self.output != self.hidden

    def expected(self, gates: int) -> list[tuple[str, tuple[int, ...]]]:
        """PyTorch's parameter names and shapes, in its flat order."""
        rows, out = gates * self.hidden, []
        for layer in range(self.layers):
            width = self.input_size if layer == 0 else self.directions * self.output
            for direction in range(self.directions):
                tail = f"_l{layer}" + ("_reverse" if direction else "")
                out += [
                    (f"weight_ih{tail}", (rows, width)),
                    (f"weight_hh{tail}", (rows, self.output)),
                ]
                if self.has_biases:
                    out += [(f"bias_ih{tail}", (rows,)), (f"bias_hh{tail}", (rows,))]
                if self.projected:
                    out.append((f"weight_hr{tail}", (self.output, self.hidden)))
        return out


def _check_params(name: str, params, expected: list, x: Tensor) -> list[Tensor]:
    """params as a list, its count, shapes and dtypes checked against PyTorch's layout."""
    if not isinstance(params, tuple | list):
        raise TypeError(
            f"{name}(): argument 'params' must be a list of Tensors, not {type(params).__name__}"
        )
    if len(params) != len(expected):
        raise ValueError(
            f"{name}: got an incorrect number of RNN parameters: expected {len(expected)}, got"
            f" {len(params)}"
        )
    for i, (p, (what, shape)) in enumerate(zip(params, expected)):
        _check_shape(name, f"{what} (params[{i}])", tensor_param(p, name, f"params[{i}]"), shape)
    _same_dtypes(name, x, {f"params[{i}]": p for i, p in enumerate(params)})
    return list(params)


def _weights(params: list[Tensor], stack: _Stack) -> list[_Weights]:
    """The flat params grouped per layer and direction."""
    per = 2 + 2 * stack.has_biases + stack.projected
    groups = [params[i : i + per] for i in range(0, len(params), per)]
    return [
        _Weights(
            g[0],
            g[1],
            *(g[2:4] if stack.has_biases else (None, None)),
            g[-1] if stack.projected else None,
        )
        for g in groups
    ]


class _Padded(NamedTuple):
    """A padded layer input [T, N, ...] (time_dim 0) or [N, T, ...] (time_dim 1): step t is
    its slice along time_dim, every step of the whole batch."""

    time_dim: int

    def sizes(self, x: Tensor) -> list[int]:
        """Each step's batch size."""
        return [x.shape[1 - self.time_dim]] * x.shape[self.time_dim]

    def at(self, x: Tensor, t: int) -> Tensor:
        """Step t's rows of x."""
        return Tensor.trusted(selected(x._impl, self.time_dim, t))


class _Packed(NamedTuple):
    """A packed layer input [sum(batch_sizes), ...]: step t is its batch_sizes[t] rows from
    offsets[t] on, the first rows of the sequences still running."""

    batch_sizes: tuple[int, ...]
    offsets: tuple[int, ...]

    def sizes(self, x: Tensor) -> list[int]:
        """Each step's batch size."""
        return list(self.batch_sizes)

    def at(self, x: Tensor, t: int) -> Tensor:
        """Step t's rows of x."""
        return Tensor.trusted(narrowed(x._impl, 0, self.offsets[t], self.batch_sizes[t]))


def _padded_steps(name: str, x: Tensor, batch_first: bool) -> tuple[_Padded, int]:
    """A padded input's steps and batch size; its rank and length checked."""
    _check_rank(name, "input", x, 3)
    time_dim = 1 if batch_first else 0
    if x.shape[time_dim] == 0:
        raise ValueError(
            f"Expected sequence length to be larger than 0 in RNN, got input {list(x.shape)}"
        )
    return _Padded(time_dim), x.shape[1 - time_dim]


def _batch_sizes(name: str, batch_sizes) -> list[int]:
    """A packed input's batch_sizes (a 1-D int64 tensor) as Python ints, checked positive
    and non-increasing (the layout pack_padded_sequence makes)."""
    t = tensor_param(batch_sizes, name, "batch_sizes")
    if t.dtype is not int64:
        raise TypeError(f"{name}: expected batch_sizes of dtype int64, got {t.dtype}")
    _check_rank(name, "batch_sizes", t, 1)
    sizes = [int(v) for v in t.tolist()]
    if not sizes or min(sizes) < 1:
        raise ValueError(f"{name}: expected batch_sizes of positive sizes, got {sizes}")
    if any(a < b for a, b in zip(sizes, sizes[1:])):
        raise ValueError(f"{name}: expected non-increasing batch_sizes, got {sizes}")
    return sizes


def _packed_steps(name: str, x: Tensor, batch_sizes) -> tuple[_Packed, int]:
    """A packed input's steps and batch size (batch_sizes[0]); data's rows checked to be
    sum(batch_sizes)."""
    _check_rank(name, "data", x, 2)
    sizes = _batch_sizes(name, batch_sizes)
    if sum(sizes) != x.shape[0]:
        raise ValueError(
            f"{name}: batch_sizes {sizes} sum to {sum(sizes)}, but data has {x.shape[0]} rows"
        )
    return _Packed(tuple(sizes), tuple(accumulate(sizes[:-1], initial=0))), sizes[0]


def _stack_of(name: str, x: Tensor, batch: int, states: tuple, args: dict) -> _Stack:
    """The layout the input, hidden states and flags give; hx's ranks and shapes checked."""
    layers = args["num_layers"]
    if isinstance(layers, bool) or not isinstance(layers, int) or layers < 1:
        raise ValueError(f"{name}: num_layers must be a positive int, got {layers!r}")
    for i, h in enumerate(states):
        _check_rank(name, f"hx[{i}]", h, 3)
    directions = 2 if args["bidirectional"] else 1
    hidden, output = states[-1].shape[2], states[0].shape[2]
    stack = _Stack(x.shape[-1], hidden, output, layers, directions, bool(args["has_biases"]))
    for i, h in enumerate(states):
        size = output if i == 0 else hidden
        _check_shape(name, f"hx[{i}]", h, (layers * directions, batch, size))
    return stack


def _first_rows(state: tuple, rows: int) -> tuple:
    """Each state's first `rows` rows."""
    return tuple(s.narrow(0, 0, rows) for s in state)


def _resized(state: tuple, initial: tuple, rows: int, finished: list) -> tuple:
    """state cut or grown to `rows` rows: rows cut off have ended (their last state goes to
    `finished`), rows added start from `initial`'s."""
    have = state[0].shape[0]
    if rows < have:
        finished.append(tuple(s.narrow(0, rows, have - rows) for s in state))
        return _first_rows(state, rows)
    if rows > have:
        return tuple(
            index_ops.cat([s, h.narrow(0, have, rows - have)]) for s, h in zip(state, initial)
        )
    return state


def _last_states(finished: list[tuple]) -> tuple:
    """Every row's last state from the row blocks as they ended (the last rows first)."""
    if len(finished) == 1:
        return finished[0]
    return tuple(index_ops.cat([f[i] for f in reversed(finished)]) for i in range(len(finished[0])))


def _run(
    kind: _Kind,
    x: Tensor,
    weights: _Weights,
    initial: tuple,
    out: Tensor,
    steps: _Padded | _Packed,
    reverse: bool,
    dtype: DType,
) -> tuple:
    """One layer in one direction: the input projection of every step in one matmul, then
    the steps in order, each h written into its rows of `out`; each row's last state."""
    flat = x.reshape(-1, x.shape[-1])
    b_ih, b_hh = weights.b_ih, weights.b_hh
    if kind.adds_projections and b_ih is not None and b_hh is not None:
        b_ih, b_hh = b_ih + b_hh, None  # added once, not at every step
    gates = _linear(flat, weights.w_ih, b_ih).reshape(*x.shape[:-1], weights.w_ih.shape[0])
    sizes = steps.sizes(x)
    order = range(len(sizes) - 1, -1, -1) if reverse else range(len(sizes))
    state, finished = _first_rows(initial, sizes[order[0]]), []
    w_hh = weights.w_hh.t().contiguous()  # the same B for every step's product
    for t in order:
        state = _resized(state, initial, sizes[t], finished)
        hg = (
            linalg.matmul(state[0], w_hh) if b_hh is None else blas_like.addmm(b_hh, state[0], w_hh)
        )
        state = kind.step(steps.at(gates, t), hg, state, weights, dtype, steps.at(out, t))
    return _last_states([*finished, state])


def _layers(
    kind: _Kind,
    x: Tensor,
    states: tuple,
    weights: list,
    stack: _Stack,
    steps: _Padded | _Packed,
    noise: Callable,
    dtype: DType,
) -> tuple[Tensor, list]:
    """The layers in turn, `noise` (dropout) between them: the last output and each layer
    and direction's last state."""
    finals = []
    for layer in range(stack.layers):
        x = noise(x) if layer else x
        shape = (*x.shape[:-1], stack.directions * stack.output)
        if layer == stack.layers - 1 and type(steps) is _Padded and steps.time_dim == 1:
            # torch's batch_first output is its [T, N, D H] result read batch first
            time_major = empty_impl((shape[1], shape[0], shape[2]), dtype, x.device)
            out = Tensor(time_major).transpose(0, 1)
        else:
            out = Tensor(empty_impl(shape, dtype, x.device))
        for d in range(stack.directions):
            index = layer * stack.directions + d
            slot = out.narrow(out.ndim - 1, d * stack.output, stack.output)
            state = tuple(h[index] for h in states)
            finals.append(_run(kind, x, weights[index], state, slot, steps, d == 1, dtype))
        x = out
    return x, finals


def _sequence(
    name: str, x: Tensor, steps: _Padded | _Packed, batch: int, hx, params, args: dict
) -> tuple[Tensor, ...]:
    """The stacked recurrence `name` over the whole sequence: (output, h_n[, c_n])."""
    kind = _SEQUENCES[name]
    states = _states(name, hx, kind.states)
    dtype = _result_dtype(name, kind, x.dtype)
    stack = _stack_of(name, x, batch, states, args)
    _same_dtypes(name, x, {f"hx[{i}]": h for i, h in enumerate(states)})
    weights = _weights(_check_params(name, params, stack.expected(kind.gates), x), stack)
    p, train = args["dropout"], args["train"]

    def noise(t: Tensor) -> Tensor:
        return _dropout(t, p, True) if train and p else t

    out, finals = _layers(kind, x, states, weights, stack, steps, noise, dtype)
    return (out, *(index_ops.stack([f[i] for f in finals]) for i in range(kind.states)))


_FLAGS = ("has_biases", "num_layers", "dropout", "train", "bidirectional")


def _padded(name: str, input, hx, params, *flags) -> tuple[Tensor, ...]:
    """torch.NAME's padded form (input, hx, params, *_FLAGS, batch_first)."""
    x = tensor_param(input, name, "input")
    steps, batch = _padded_steps(name, x, flags[-1])
    return _sequence(name, x, steps, batch, hx, params, dict(zip(_FLAGS, flags[:-1])))


def _packed(name: str, data, batch_sizes, hx, params, *flags) -> tuple[Tensor, ...]:
    """torch.NAME's packed form (data, batch_sizes, hx, params, *_FLAGS): the output is packed
    as data is."""
    x = tensor_param(data, name, "data")
    steps, batch = _packed_steps(name, x, batch_sizes)
    return _sequence(name, x, steps, batch, hx, params, dict(zip(_FLAGS, flags)))


def _sequence_function(name: str, doc: str) -> Callable:
    """torch.NAME(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first) for the recurrence `name` (hx a tensor, or LSTM's (h0, c0)), or its packed
    form (data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
    bidirectional), told apart as PyTorch's overloads are: by the params list in the fourth
    place, or (hx a tensor) a tensor in the third."""

    def sequence(
        input: Tensor,
        hx,
        params: Sequence[Tensor],
        has_biases: bool,
        num_layers: int,
        dropout: float,
        train: bool,
        bidirectional: bool,
        batch_first: bool,
    ) -> tuple[Tensor, ...]:
        args = (input, hx, params, has_biases, num_layers, dropout, train, bidirectional)
        if isinstance(has_biases, tuple | list) or isinstance(params, Tensor):
            return _packed(name, *args, batch_first)
        return _padded(name, *args, batch_first)

    sequence.__name__ = sequence.__qualname__ = name
    sequence.__doc__ = doc
    return sequence


_PUBLIC = {
    "rnn_tanh_cell": _cell_function(
        "rnn_tanh_cell", "torch.rnn_tanh_cell: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."
    ),
    "rnn_relu_cell": _cell_function(
        "rnn_relu_cell", "torch.rnn_relu_cell: h' = relu(x W_ih^T + b_ih + h W_hh^T + b_hh)."
    ),
    "lstm_cell": lstm_cell,
    "gru_cell": _cell_function("gru_cell", "torch.gru_cell: h' of a GRU step, gates r, z, n."),
    "rnn_tanh": _sequence_function(
        "rnn_tanh", "torch.rnn_tanh (nn.RNN's forward): (output, h_n) of stacked tanh layers."
    ),
    "rnn_relu": _sequence_function(
        "rnn_relu", "torch.rnn_relu (nn.RNN's forward): (output, h_n) of stacked relu layers."
    ),
    "lstm": _sequence_function(
        "lstm",
        "torch.lstm (nn.LSTM's forward): (output, h_n, c_n); hx = (h0, c0), h0 of the"
        " projection's size when params hold w_hr. Packed: (data, batch_sizes, hx, params, ...).",
    ),
    "gru": _sequence_function(
        "gru", "torch.gru (nn.GRU's forward): (output, h_n); packed: (data, batch_sizes, ...)."
    ),
}

FUNCTIONS: dict[str, Callable] = {name: op_door(name, fn) for name, fn in _PUBLIC.items()}
autocast.install(FUNCTIONS, "recurrent")  # nn.LSTM, nn.RNN run in the lower dtype there
