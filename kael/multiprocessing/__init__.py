"""kael.multiprocessing: torch.multiprocessing, Python's multiprocessing with every name
it exports (Process, Queue, Pipe, Pool, get_context, ...), plus spawn/start_processes,
which run fn(i, *args) in N processes and raise a child's failure in the parent, and
torch's sharing-strategy setting.

Deviation from PyTorch: torch registers reducers that send a CPU tensor through a queue or
pipe as a handle to shared memory (moving it there first), so both sides see one storage.
kael registers none: a kael tensor sent through these queues and pipes is pickled by value
(Tensor.__reduce_ex__ copies its bytes), and the receiver gets an equal, separate tensor;
the sharing strategy is recorded but changes nothing. Memory is shared across processes by
fork: a tensor moved to shared memory with share_memory_() before a fork (start method
'fork', the tensor passed in args or reached as a global) is one storage in the parent and
its children, and each side sees the other's writes.

Smaller deviations: set_sharing_strategy rejects a bad name with kael.ValueError (torch
raises AssertionError); start_processes checks fn, nprocs and start_method up front
(kael.TypeError, kael.ValueError) and has no TORCH_MP_PARALLEL_START parallel start;
__all__ also lists the spawn names, which torch's leaves out."""

import multiprocessing as _multiprocessing

from kael.multiprocessing.errors import (
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
)
from kael.multiprocessing.sharing import (
    get_all_sharing_strategies,
    get_sharing_strategy,
    set_sharing_strategy,
)
from kael.multiprocessing.spawn import ProcessContext, SpawnContext, spawn, start_processes

globals().update({name: getattr(_multiprocessing, name) for name in _multiprocessing.__all__})

# torch.multiprocessing's __all__ (its sharing functions and multiprocessing's names), and
# the spawn names, which torch has as attributes but leaves out of its __all__.
__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"]
__all__ += _multiprocessing.__all__
__all__ += ["ProcessContext", "ProcessException", "ProcessExitedException"]
__all__ += ["ProcessRaisedException", "SpawnContext", "spawn", "start_processes"]
