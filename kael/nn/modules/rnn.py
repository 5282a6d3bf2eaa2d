"""Recurrent modules: RNN, LSTM (with projections) and GRU over kael.rnn_tanh/lstm/gru,
stacked, bidirectional, padded or packed, batched or not; and their one-step cells. The
parameters are PyTorch's (weight_ih_l0, ..., weight_hr_l0_reverse) in PyTorch's order."""

from __future__ import annotations

import math
import numbers

from kael.frontend import recurrent
from kael.frontend.factories import empty, zeros
from kael.frontend.tensor import Tensor
from kael.nn import init
from kael.nn.modules.module import Module
from kael.nn.parameter import Parameter
from kael.nn.utils.rnn import PackedSequence
from kael.runtime import user_warning
from kael.runtime.errors import ValueError

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
_SEQUENCES = {
    "LSTM": recurrent.FUNCTIONS["lstm"],
    "GRU": recurrent.FUNCTIONS["gru"],
    "RNN_TANH": recurrent.FUNCTIONS["rnn_tanh"],
    "RNN_RELU": recurrent.FUNCTIONS["rnn_relu"],
}


class RNNBase(Module):
    """The stack's parameters, checks and forward, shared by RNN, LSTM and GRU."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if not isinstance(input_size, int) or input_size <= 0:
            raise ValueError(f"input_size must be a positive integer, got {input_size}")
        _check_sizes(hidden_size, num_layers, dropout, proj_size)
        if dropout > 0 and num_layers == 1:
            user_warning.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}"
            )
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        self.proj_size = proj_size
        directions = 2 if bidirectional else 1
        real_hidden = proj_size or hidden_size
        gates = _GATES[mode] * hidden_size
        made = {"device": device, "dtype": dtype}
        self._flat_weights_names: list[str] = []
        for layer in range(num_layers):
            width = input_size if layer == 0 else real_hidden * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = [("weight_ih", (gates, width)), ("weight_hh", (gates, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(empty(shape, **made)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list[Tensor]:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Tensor]]:
        """The parameters of each layer and direction, in torch's order."""
        per = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional else 1))
        weights = self._flat_weights
        return [weights[i : i + per] for i in range(0, len(weights), per)]

    def flatten_parameters(self) -> None:
        """torch's cuDNN weight compaction: kael's kernels read the parameters as they are."""

    def _check_hidden(self, hx, batch: int) -> None:
        """torch's check_forward_args for h0 (and c0): (layers x directions, batch, size)."""
        layers = self.num_layers * (2 if self.bidirectional else 1)
        states = hx if self.mode == "LSTM" else (hx,)
        sizes = (self.proj_size or self.hidden_size, self.hidden_size)
        for k, (state, size) in enumerate(zip(states, sizes)):
            want = (layers, batch, size)
            if tuple(state.shape) != want:
                which = f"hidden[{k}]" if self.mode == "LSTM" else "hidden"
                raise ValueError(f"Expected {which} size {want}, got {list(state.shape)}")

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def _initial_state(self, batch: int, like: Tensor):
        """Zeros for h0 (and c0): the stack's layers x directions, batch, hidden size."""
        layers = self.num_layers * (2 if self.bidirectional else 1)
        h = zeros((layers, batch, self.proj_size or self.hidden_size), dtype=like.dtype)
        if self.mode != "LSTM":
            return h.to(like.device)
        c = zeros((layers, batch, self.hidden_size), dtype=like.dtype)
        return h.to(like.device), c.to(like.device)

    def forward(self, input, hx=None):
        """(output, h_n) for RNN and GRU, (output, (h_n, c_n)) for LSTM; a PackedSequence in
        gives one out, and a 2-d input is one unbatched sequence."""
        run = _SEQUENCES[self.mode]
        flags = (self.bias, self.num_layers, self.dropout, self.training, self.bidirectional)
        if isinstance(input, PackedSequence):
            self._check_input_size(input.data)
            order = input.sorted_indices
            batch = int(input.batch_sizes[0].item())
            hx = self._initial_state(batch, input.data) if hx is None else _permute(hx, order)
            self._check_hidden(hx, batch)
            result = run(input.data, input.batch_sizes, hx, self._flat_weights, *flags)
            output = PackedSequence(result[0], input.batch_sizes, order, input.unsorted_indices)
            return output, _permute(_hidden(result, self.mode), input.unsorted_indices)
        batched = input.dim() == 3
        if input.dim() not in (2, 3):
            raise ValueError(
                f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D "
                "input instead"
            )
        if hx is not None:
            _check_hidden_rank(self.mode, hx, batched)
        self._check_input_size(input)
        batch_dim = 0 if self.batch_first else 1
        x = input if batched else input.unsqueeze(batch_dim)
        if hx is None:
            hx = self._initial_state(x.shape[batch_dim], x)
        elif not batched:
            hx = _map(hx, lambda t: t.unsqueeze(1))
        self._check_hidden(hx, x.shape[batch_dim])
        result = run(x, hx, self._flat_weights, *flags, self.batch_first)
        output, hidden = result[0], _hidden(result, self.mode)
        if not batched:
            output, hidden = output.squeeze(batch_dim), _map(hidden, lambda t: t.squeeze(1))
        return output, hidden

    def _check_input_size(self, x: Tensor) -> None:
        """PyTorch's check of the features, which names the input rather than the weights."""
        if x.shape[-1] != self.input_size:
            raise ValueError(
                "input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {x.shape[-1]}"
            )

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


def _check_sizes(hidden_size, num_layers, dropout, proj_size) -> None:
    """PyTorch's checks of a stack's settings, in its words."""
    if (
        not isinstance(dropout, numbers.Number)
        or isinstance(dropout, bool)
        or not 0 <= dropout <= 1
    ):
        raise ValueError(
            "dropout should be a number in range [0, 1] representing the probability of an "
            "element being zeroed"
        )
    if not isinstance(hidden_size, int) or hidden_size <= 0:
        raise ValueError(f"hidden_size must be a positive integer, got {hidden_size}")
    if not isinstance(num_layers, int) or num_layers <= 0:
        raise ValueError(f"num_layers must be a positive integer, got {num_layers}")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


def _check_hidden_rank(mode: str, hx, batched: bool) -> None:
    """PyTorch's check that h0 (and LSTM's c0) have the input's rank: 3 batched, 2 not.
    Other mistakes in hx are left to the functional to name."""
    states = tuple(hx) if isinstance(hx, (tuple, list)) else (hx,)
    if len(states) != (2 if mode == "LSTM" else 1):
        return
    if not all(isinstance(t, Tensor) for t in states):
        return
    rank = 3 if batched else 2
    ranks = [t.dim() for t in states]
    if all(r == rank for r in ranks):
        return
    kind = "batched 3-D" if batched else "unbatched 2-D"
    names, got = (
        ("hx and cx", f"({ranks[0]}-D, {ranks[1]}-D) tensors")
        if mode == "LSTM"
        else ("hx", f"{ranks[0]}-D tensor")
    )
    raise ValueError(f"For {kind} input, {names} should also be {rank}-D but got {got}")


def _hidden(result: tuple, mode: str):
    return (result[1], result[2]) if mode == "LSTM" else result[1]


def _map(state, fn):
    return tuple(fn(t) for t in state) if isinstance(state, tuple | list) else fn(state)


def _permute(state, order: Tensor | None):
    """The state's batch (dim 1) in the packed batch's order (None: as it is)."""
    return state if order is None else _map(state, lambda t: t.index_select(1, order))


class RNN(RNNBase):
    """Elman RNN layers: h_t = tanh (or relu)(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)."""

    def __init__(self, *args, nonlinearity: str = "tanh", **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:  # PyTorch's positional order: input, hidden, layers, nonlinearity
            nonlinearity, args = args[3], args[:3] + args[4:]
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        self.nonlinearity = nonlinearity
        super().__init__("RNN_" + nonlinearity.upper(), *args, **kwargs)


class LSTM(RNNBase):
    """LSTM layers (gates i, f, g, o), with an optional projection of h (proj_size)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """GRU layers (gates r, z, n)."""

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    """One step's weights: weight_ih (chunks x hidden, input), weight_hh, and the biases."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool, chunks: int, device=None, dtype=None
    ) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        made = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(empty((chunks * hidden_size, input_size), **made))
        self.weight_hh = Parameter(empty((chunks * hidden_size, hidden_size), **made))
        for name in ("bias_ih", "bias_hh"):
            value = Parameter(empty(chunks * hidden_size, **made)) if bias else None
            self.register_parameter(name, value)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def _step(self, input, hx, cell):
        """cell(x, h, weights) on a batch; a 1-d input is one sample; hx None is zeros."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            h = zeros((x.shape[0], self.hidden_size), dtype=x.dtype).to(x.device)
            hx = (h, h) if isinstance(self, LSTMCell) else h
        elif not batched:
            hx = _map(hx, lambda t: t.unsqueeze(0))
        out = cell(x, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else _map(out, lambda t: t.squeeze(0))

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    """One Elman step: h' = tanh (or relu)(x W_ih^T + b_ih + h W_hh^T + b_hh)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device=None,
        dtype=None,
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        return self._step(input, hx, recurrent.FUNCTIONS[f"rnn_{self.nonlinearity}_cell"])


class LSTMCell(RNNCellBase):
    """One LSTM step: (h', c') from x and (h, c)."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        return self._step(input, hx, recurrent.FUNCTIONS["lstm_cell"])


class GRUCell(RNNCellBase):
    """One GRU step: h' from x and h."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        return self._step(input, hx, recurrent.FUNCTIONS["gru_cell"])
