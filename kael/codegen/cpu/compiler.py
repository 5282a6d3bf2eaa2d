"""LLVM for the host: target machine, optimization pipeline, object code and ORC loading.

llvmlite.binding is imported on first use only, so a process whose kernels all come
from the disk cache pays for loading it but never runs the optimizer or code generator.
Every LLVM call and every lazily built LLVM object holds kael/codegen/llvm.py's lock.
"""

from __future__ import annotations

import contextlib
import ctypes
import re

from llvmlite import ir

from kael.codegen import llvm as _binding
from kael.codegen.cpu.loops import build_function
from kael.codegen.lowering import CODEGEN_SCHEMA
from kael.ir.kernel import Kernel
from kael.ir.reduction import Reduction
from kael.runtime import kernel_cache, sync

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


def _machine(opt: int):
    llvm = _llvm()
    t = host_target()
    target = llvm.Target.from_triple(t["triple"])
    return target.create_target_machine(
        cpu=t["cpu"], features=t["features"], opt=opt, reloc="pic", codemodel="default"
    )


@sync.cached(lock_with=_lock)
def _target_machine():
    return _machine(3)


@sync.cached(lock_with=_lock)
def _tier0_machine():
    """Code generation at -O0 (fast instruction selection and register allocation) for
    tier-0 code (codegen/cpu/tiers.py)."""
    return _machine(0)


def vector_features() -> list[str]:
    """The host's SIMD features, for the tour and debug output."""
    wanted = ("sse4.2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "amx-tile")
    on = {f[1:] for f in host_target()["features"].split(",") if f.startswith("+")}
    return [f for f in wanted if f in on]


def has_feature(name: str) -> bool:
    """Whether the host target has the LLVM feature `name` ("f16c", "avx512f", ...)."""
    return f"+{name}" in host_target()["features"].split(",")


@sync.cached(lock_with=_lock)
def has_avx512f() -> bool:
    """Whether host code may use AVX-512 instructions (vscalef, vpermi2var)."""
    return "avx512f" in vector_features()


def vector_bytes() -> int:
    """The bytes of the host's widest vector register that kael's kernels block for."""
    return 64 if has_avx512f() else 32


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


# The passes kael's generated kernels get where kael vectorized their loops itself: they
# arrive vectorized, unrolled and with their loops in shape, and need SSA form (their
# loop indices live in allocas) and folding; code generation's own CSE covers the rest
# (NewGVN and a second round of the others cost 15% of the compile time and changed no
# run time: 16.0 -> 13.6 ms a kernel, 1.00x). LLVM's O3 pipeline vectorizes their
# scalar tails again and unrolls more, and codegen's loop strength reduction then spends
# most of its time on that code: 52 -> 21 ms a kernel, the same run times within this
# machine's noise (benchmarks/bench_passes.py). A kernel kael left scalar (a strided or
# gathered inner dim) keeps O3 (less its unroller, see _optimized), whose loop
# vectorizer makes it 1.2x faster; so do the scalar hand-written libraries (gathers,
# nonzero, scans: 1.4-3x faster for it), while those kael vectorized itself (gemm, rows)
# take the short list too (handwritten.compiled).
KERNEL_PASSES = ("sroa", "instruction_combine", "simplify_cfg")
_VECTOR_TYPE = re.compile(r"<\d+ x ")


def kernel_passes(text: str) -> tuple[str, ...] | None:
    """The passes for a generated kernel's LLVM IR text: KERNEL_PASSES where kael emitted
    vector code, else None (O3)."""
    return KERNEL_PASSES if _VECTOR_TYPE.search(text) else None


def _parsed(text: str):
    """LLVM IR text parsed and verified (held under _lock)."""
    mod = _llvm().parse_assembly(text)
    mod.verify()
    return mod


def _optimized(module: ir.Module | str, passes: tuple[str, ...] | None = None):
    """`module` parsed, verified and optimized: by `passes` in order, else LLVM's O3."""
    llvm = _llvm()
    mod = _parsed(str(module))
    tm = _target_machine()
    if passes is not None:
        pm = llvm.create_new_module_pass_manager()
        for name in passes:
            getattr(pm, f"add_{name}_pass")()
        pm.run(mod, llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(2)))
        return mod
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True  # off by default in llvmlite 0.50
    # The vectorizer interleaves what it vectorizes; the unroller after it cost a third of
    # the scalar libraries' compile time (nonzero 98 -> 60 ms, scan 37 -> 18 ms) for run
    # times this machine's noise cannot tell apart (a strided kernel 0.87x, another 1.08x).
    pto.loop_unrolling = False
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


# Code generation for the same kernels skips loop strength reduction: their loops step
# one index through plain base + index * size addresses, which x86 addressing modes take
# as they are, and LSR took a sixth of their compile time (12.9 -> 10.8 ms a kernel over
# the README's kernels, up to a third on small ones; run times unchanged). cl::opt settings
# are process-wide: set for one emission and restored, under the LLVM lock.
_KERNEL_CODEGEN = ("-disable-lsr",)


@contextlib.contextmanager
def _codegen_for(passes: tuple[str, ...] | None):
    """Code generation options for a module optimized by `passes` (held under _lock)."""
    if passes is None:
        yield
        return
    llvm = _llvm()
    for option in _KERNEL_CODEGEN:
        llvm.set_option("kael", f"{option}=true")
    try:
        yield
    finally:
        for option in _KERNEL_CODEGEN:
            llvm.set_option("kael", f"{option}=false")


def _emit(text: str, passes: tuple[str, ...] | None, assembly: bool = False):
    """Object code (or assembly text) of LLVM IR text optimized by `passes`."""
    with _lock:
        mod = _optimized(text, passes)
        tm = _target_machine()
        with _codegen_for(passes):
            return tm.emit_assembly(mod) if assembly else tm.emit_object(mod)


def emit_object(text: str, passes: tuple[str, ...] | None) -> bytes:
    """Optimized object code of LLVM IR text with its target (see with_target)."""
    return _emit(text, passes)


def emit_tier0(text: str) -> bytes:
    """Object code of LLVM IR text with its target, unoptimized and generated at -O0:
    about half the optimized build's time (codegen/cpu/tiers.py)."""
    with _lock:
        return _tier0_machine().emit_object(_parsed(text))


def kernel_text(kernel: Kernel, symbol: str) -> str:
    """The kernel's LLVM IR text, with the host target."""
    return str(build_module(kernel, symbol))


def with_target(text: str) -> str:
    """LLVM IR text without a target header, given the host's."""
    t = host_target()
    header = (
        f'target triple = "{t["triple"]}"\ntarget datalayout = "{_target_machine().target_data}"\n'
    )
    return header + text


def compile_ir_text(text: str, passes: tuple[str, ...] | None = None) -> bytes:
    """Optimized host object code for LLVM IR text without a target header (link_glue's)."""
    return _emit(with_target(text), passes)


def assembly_of_ir_text(text: str, passes: tuple[str, ...] | None = None) -> str:
    """The host assembly of LLVM IR text, as compile_ir_text compiles it."""
    return _emit(with_target(text), passes, assembly=True)


def optimized_ir(kernel: Kernel, symbol: str) -> str:
    text = kernel_text(kernel, symbol)
    with _lock:
        return str(_optimized(text, kernel_passes(text)))


def assembly(kernel: Kernel, symbol: str) -> str:
    text = kernel_text(kernel, symbol)
    return _emit(text, kernel_passes(text), assembly=True)


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


def link_glue(name: str, text: str, symbols: tuple[str, ...]):
    """Hand-written glue in LLVM IR text (the launch builtins, the thread pool) linked for
    the life of the process: compiled by the short pass list (it has no loop worth
    vectorizing), its object code cached on disk keyed by the text and the target.
    Returns ({symbol: address}, tracker); the tracker is leaked on purpose, as its code
    may run until the process ends, interpreter shutdown included."""
    t = host_target()
    key = kernel_cache.key_of(
        name, text, repr(KERNEL_PASSES), CODEGEN_SCHEMA, t["triple"], t["cpu"], t["features"],
        t["llvm"],
    )  # fmt: skip
    obj, _ = kernel_cache.fetch("cpu", key, lambda: compile_ir_text(text, KERNEL_PASSES))
    addresses, tracker = load_object_symbols(obj, symbols, f"{name}_{key[:12]}")
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(tracker))
    return addresses, tracker
