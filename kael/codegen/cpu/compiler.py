"""LLVM for the host: target machine, optimization pipeline, object code and ORC loading.

llvmlite.binding is imported on first use only, so a process whose kernels all come
from the disk cache pays for loading it but never runs the optimizer or code generator.
Every LLVM call and every lazily built LLVM object holds kael/codegen/llvm.py's lock.
"""

from __future__ import annotations

import ctypes

from llvmlite import ir

from kael.codegen import llvm as _binding
from kael.codegen.cpu.loops import build_function
from kael.ir.kernel import Kernel
from kael.ir.reduction import Reduction
from kael.runtime import sync

_lock = _binding.LOCK
_llvm = _binding.binding


@sync.cached(lock_with=_lock)
def host_target() -> dict:
    """The host's triple, CPU name and feature string, as LLVM sees them."""
    llvm = _llvm()
    features = llvm.get_host_cpu_features().flatten()
    # Intel tuning prefers 256-bit vectors even with AVX-512; kael wants the full width.
    if "+avx512f" in features:
        features += ",-prefer-256-bit"
    return {
        "triple": llvm.get_process_triple(),
        "cpu": llvm.get_host_cpu_name(),
        "features": features,
        "llvm": ".".join(str(v) for v in llvm.llvm_version_info),
    }


@sync.cached(lock_with=_lock)
def _target_machine():
    llvm = _llvm()
    t = host_target()
    target = llvm.Target.from_triple(t["triple"])
    return target.create_target_machine(
        cpu=t["cpu"], features=t["features"], opt=3, reloc="pic", codemodel="default"
    )


def vector_features() -> list[str]:
    """The host's SIMD features, for the tour and debug output."""
    wanted = ("sse4.2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "amx-tile")
    on = {f[1:] for f in host_target()["features"].split(",") if f.startswith("+")}
    return [f for f in wanted if f in on]


def build_module(kernel: Kernel, symbol: str) -> ir.Module:
    """The kernel as an llvmlite module for the host target."""
    module = ir.Module(name=symbol)
    module.triple = host_target()["triple"]
    module.data_layout = str(_target_machine().target_data)
    if isinstance(kernel, Reduction):
        from kael.codegen.cpu.reduce import fill_module  # it imports this module

        fill_module(module, kernel, symbol)
    else:
        build_function(module, kernel, symbol)
    return module


def _optimized(module: ir.Module | str):
    llvm = _llvm()
    mod = llvm.parse_assembly(str(module))
    mod.verify()
    tm = _target_machine()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True  # off by default in llvmlite 0.50
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


def compile_object(kernel: Kernel, symbol: str) -> bytes:
    """Optimized host object code for `kernel`, exporting `symbol`."""
    with _lock:
        return _target_machine().emit_object(_optimized(build_module(kernel, symbol)))


def _with_target(text: str) -> str:
    t = host_target()
    header = (
        f'target triple = "{t["triple"]}"\ntarget datalayout = "{_target_machine().target_data}"\n'
    )
    return header + text


def compile_ir_text(text: str) -> bytes:
    """Optimized host object code for hand-written LLVM IR (the native thread pool)."""
    with _lock:
        return _target_machine().emit_object(_optimized(_with_target(text)))


def assembly_of_ir_text(text: str) -> str:
    """The host assembly of hand-written LLVM IR, as compile_ir_text optimizes it."""
    with _lock:
        return _target_machine().emit_assembly(_optimized(_with_target(text)))


def optimized_ir(kernel: Kernel, symbol: str) -> str:
    with _lock:
        return str(_optimized(build_module(kernel, symbol)))


def assembly(kernel: Kernel, symbol: str) -> str:
    with _lock:
        return _target_machine().emit_assembly(_optimized(build_module(kernel, symbol)))


@sync.cached(lock_with=_lock)
def _jit():
    jit = _llvm().create_lljit_compiler(_target_machine())
    # Never destroyed, not even at interpreter exit: native pool workers may still be
    # running code it owns while Python tears down its modules.
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(jit))
    return jit


def load_object_symbols(obj: bytes, symbols: tuple[str, ...], library: str):
    """Link object code into the process as `library`; ({symbol: address}, tracker).

    Keep the tracker alive: dropping it unloads the code.
    """
    builder = _llvm().JITLibraryBuilder().add_object_img(obj).add_current_process()
    for name in symbols:
        builder = builder.export_symbol(name)
    with _lock:
        # A name is taken for good once linked: a process forked while another thread had
        # linked a kernel but not yet cached it links that kernel again, under a new name.
        unique, n = library, 1
        while unique in _linked:
            n += 1
            unique = f"{library}~{n}"
        tracker = builder.link(_jit(), unique)
        _linked.add(unique)
    return {name: tracker[name] for name in symbols}, tracker


_linked: set[str] = set()  # the JIT's library names in this process (changed under _lock)


def load_object(obj: bytes, symbol: str):
    """Link one kernel's object code; returns (address, tracker)."""
    addresses, tracker = load_object_symbols(obj, (symbol,), symbol)
    return addresses[symbol], tracker
