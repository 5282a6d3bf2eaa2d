"""What the recurrent tests share: torch's modules whose flat weights kael's functions take,
and the tolerance of each dtype against torch."""

import torch
from torch import nn

TOL = {torch.float32: 1e-5, torch.float64: 1e-10, torch.float16: 1e-2, torch.bfloat16: 5e-2}
MODULES = {
    "rnn_tanh": lambda *a, **k: nn.RNN(*a, nonlinearity="tanh", **k),
    "rnn_relu": lambda *a, **k: nn.RNN(*a, nonlinearity="relu", **k),
    "lstm": nn.LSTM,
    "gru": nn.GRU,
}
