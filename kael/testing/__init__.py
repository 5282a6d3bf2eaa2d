"""kael.testing: torch.testing's helpers for users' own tests: `assert_close` (torch's pairs,
tolerances and messages, computed by kael's kernels) and `make_tensor`."""

from kael.testing.comparison import assert_allclose, assert_close
from kael.testing.creation import make_tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]
