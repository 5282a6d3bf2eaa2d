"""kael.cuda: whether a GPU is usable, and waiting for it."""

from kael.runtime.device import cuda_is_available as is_available
from kael.runtime.device import cuda_synchronize as synchronize

__all__ = ["is_available", "synchronize"]
