"""Recurrent layers as PyTorch has them at torch.NAME: the cells (rnn_tanh_cell, lstm_cell,
gru_cell, ...) and the whole-sequence functions nn.RNN, nn.LSTM and nn.GRU call (torch.lstm,
torch.gru, ...), on kael's matmul and fused elementwise ops."""

from __future__ import annotations

from collections.abc import Callable

FUNCTIONS: dict[str, Callable] = {}
