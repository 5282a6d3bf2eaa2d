"""kael.nn.utils: PyTorch's torch.nn.utils helpers (rnn: packed sequences)."""

from kael.nn.utils import rnn

__all__ = ["rnn"]
