"""PTX text for sm_90 from Kernels: optimized by LLVM once, then cached in memory and on disk.

A warm process never runs LLVM for a kernel it has seen; a new process with a warm disk
cache reads the stored PTX. `ptxas_check` validates PTX with NVIDIA's assembler, so the
GPU path is tested on machines without a GPU.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from llvmlite import ir

from kael.codegen import llvm as _binding
from kael.codegen.cpu import jit
from kael.codegen.lowering import CODEGEN_SCHEMA
from kael.codegen.ptx import kernel as ptx_kernel
from kael.ir.kernel import Kernel
from kael.ir.printer import format_kernel
from kael.ir.reduction import Reduction
from kael.runtime import debug, kernel_cache, sync
from kael.runtime.errors import Error
from kael.runtime.version import __version__

ARCH = "sm_90"
FEATURES = "+ptx80"
CACHE_KIND = "ptx"
PTXAS_TIMEOUT_S = 120

_llvm_lock = _binding.LOCK
_llvm = _binding.all_targets
_memory = kernel_cache.Memo()
# Editing any of the code generator or the IR invalidates cached PTX.


@sync.cached(lock_with=_llvm_lock)
def _target_machine(arch: str = ARCH):
    target = _llvm().Target.from_triple(ptx_kernel.TRIPLE)
    return target.create_target_machine(cpu=arch, features=FEATURES, opt=3)


def target_data_layout() -> str:
    """The data layout LLVM's NVPTX target machine uses."""
    return str(_target_machine().target_data)


@sync.cached
def llvm_version() -> str:
    return ".".join(str(v) for v in _llvm().llvm_version_info)


def cache_key(kernel: Kernel) -> str:
    """The kernel's PTX cache key: its printed text, the GPU target and the versions."""
    return kernel_cache.key_of(
        format_kernel(kernel),
        ptx_kernel.TRIPLE,
        ARCH,
        FEATURES,
        llvm_version(),
        __version__,
        CODEGEN_SCHEMA,
    )


def function_name(kernel: Kernel) -> str:
    """The entry's name in the PTX, for cuModuleGetFunction."""
    return jit.symbol_of(kernel, cache_key(kernel))


def build_module(kernel: Kernel) -> ir.Module:
    """The unoptimized NVPTX module of `kernel`."""
    return ptx_kernel.build_module(kernel, function_name(kernel))


def _optimized(module: ir.Module, arch: str = ARCH):
    ptx_kernel.check_intrinsics(module)  # the one door into LLVM, which aborts on them
    llvm = _llvm()
    mod = llvm.parse_assembly(str(module))
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(_target_machine(arch), pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


def optimized_ir(kernel: Kernel) -> str:
    """The optimized NVPTX LLVM IR of `kernel`, for KAEL_DEBUG and inspection."""
    module = build_module(kernel)
    with _llvm_lock:
        return str(_optimized(module))


def assemble(module: ir.Module, arch: str = ARCH) -> str:
    """Optimized PTX text of an NVPTX llvmlite module for `arch` (sm_90a: Hopper's own
    instructions, wgmma)."""
    with _llvm_lock:
        return _target_machine(arch).emit_assembly(_optimized(module, arch))


def compile_ptx(kernel: Kernel) -> str:
    """Run LLVM: the PTX text of `kernel`, bypassing every cache."""
    return assemble(build_module(kernel))


def stored_ptx(identity: str, build: Callable[[], ir.Module], arch: str = ARCH) -> str:
    """The PTX of the module `build` makes, from the disk cache when a module of the same
    `identity` (its printed kernel, or a name that fixes its code) was assembled before by
    this target and code generator; the modules that are not one Kernel come here."""
    key = kernel_cache.key_of(
        identity, ptx_kernel.TRIPLE, arch, FEATURES, llvm_version(), __version__, CODEGEN_SCHEMA
    )
    payload = kernel_cache.fetch(CACHE_KIND, key, lambda: assemble(build(), arch).encode())[0]
    return payload.decode()


def ptx_for(kernel: Kernel) -> str:
    """The PTX of `kernel`, running LLVM at most once per machine."""
    if isinstance(kernel, Reduction):
        from kael.codegen.ptx import reduce  # it imports this module

        return reduce.ptx_for(kernel)
    return _memory.get(kernel, lambda: _load_or_compile(kernel))


def _load_or_compile(kernel: Kernel) -> str:
    key = cache_key(kernel)
    start = time.perf_counter()
    payload, how = kernel_cache.fetch(CACHE_KIND, key, lambda: compile_ptx(kernel).encode())
    ptx = payload.decode()
    debug.report_kernel(
        f"{jit.symbol_of(kernel, key)} (ptx)",
        how,
        time.perf_counter() - start,
        [
            (2, "kael IR", lambda: format_kernel(kernel)),
            (3, "NVPTX LLVM IR", lambda: optimized_ir(kernel)),
            (4, "PTX", lambda: ptx),
        ],
    )
    return ptx


def ptxas_check(ptx: str, arch: str = ARCH) -> None:
    """Assemble `ptx` with `ptxas -arch=<arch>`; kael.Error with ptxas's message if it refuses."""
    exe = shutil.which("ptxas")
    if exe is None:
        raise Error("ptxas is not on PATH: cannot check PTX")
    with tempfile.TemporaryDirectory(prefix="kael-ptxas-") as tmp:
        src = Path(tmp) / "kernel.ptx"
        src.write_text(ptx)
        cmd = [exe, f"-arch={arch}", str(src), "-o", str(Path(tmp) / "kernel.cubin")]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PTXAS_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise Error(f"ptxas -arch={arch} did not finish in {PTXAS_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        message = (proc.stderr or proc.stdout).strip()
        raise Error(f"ptxas -arch={arch} rejected the PTX: {message}")
