"""Host bytes to the GPU without waiting for its queue.

cuMemcpyHtoD from pageable memory waits for every kernel queued before it; an asynchronous
copy from page-locked memory does not. So small uploads (kernel argument words, a CPU
scalar operand, an error word's zero) are staged in a pinned block, copied on the current
stream, and the block goes back to PINNED marked with that stream: it is handed out again
only once the copy is done. With the caching allocator off, the plain copy is cheaper.
"""

from __future__ import annotations

import ctypes

from kael.runtime import cuda_driver
from kael.runtime.allocator import PINNED, block_capacity, caching_allocator_enabled


def copy_to_device(dst: int, src: int, nbytes: int) -> None:
    """Queue a copy of `nbytes` from host address `src` to device address `dst` on the
    current stream; `src` may be reused at once."""
    if nbytes <= 0:
        return
    if not caching_allocator_enabled():  # a page-locked allocation and free per upload
        cuda_driver.memcpy_htod(dst, src, nbytes)  # cost more than the wait
        return
    capacity = block_capacity(nbytes)
    stage = PINNED.allocate(capacity, nbytes)
    try:
        ctypes.memmove(stage, src, nbytes)
        cuda_driver.memcpy_htod_async(dst, stage, nbytes)
        PINNED.record_stream(stage, cuda_driver.current_stream())
    finally:
        PINNED.release(stage, capacity)
