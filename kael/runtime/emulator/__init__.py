"""A CUDA device emulated on the CPU: kael's PTX run instruction by instruction.

No GPU has run kael yet, and ptxas only says the PTX is well formed. This package runs
that PTX: `ptx.py` parses the module the driver would load, `machine.py` runs a launch's
threads in lockstep over NumPy lanes (per-thread program counters, so divergent branches,
barriers and warp shuffles keep their meaning), `instructions.py` holds each instruction's
semantics, `memory.py` the device memory with bounds and alignment checks, and `driver.py`
is shaped like `cuda.bindings.driver`, so `runtime/cuda_driver.py` runs on it unchanged
when KAEL_EMULATE_CUDA=1. It is a test device: slow (about a microsecond per lane and
instruction), exact where PTX is exact (IEEE arithmetic, fma, conversions), and strict
where a GPU would fault (out-of-bounds, misaligned, diverged barriers and shuffles).

NumPy here is the emulated hardware, not an op's implementation: every value a kael op
returns on this device is computed by kael's own PTX, which these modules only execute
instruction by instruction (as a GPU's ALUs would); no kael op is computed by NumPy.
"""
