"""Hand-written CPU kernels: LLVM functions built directly with llvmlite, not from a Kernel.

Ops whose loops the IR cannot express (multinomial's sampler, scans, row kernels,
gathers, matrix products) build their functions here. Each function has a kernel's
signature, `void f(i64* args, i64 begin, i64 end)`, so runtime/launcher.py splits its
work items over the thread pool like any kernel's. `compiled(name, build)` compiles a
module once per process and caches its object code on disk, keyed by the LLVM IR text.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from kael.codegen.cpu import compiler
from kael.runtime import kernel_cache, sync
from kael.runtime.launcher import KernelFn, kernel_fn

I64 = ir.IntType(64)
# Every kernel's type: void f(i64* args, i64 begin, i64 end).
KERNEL_TYPE = ir.FunctionType(ir.VoidType(), [I64.as_pointer(), I64, I64])


def kernel_function(module: ir.Module, symbol: str) -> tuple[ir.Function, ir.IRBuilder]:
    """A new `void symbol(i64* args, i64 begin, i64 end)` and a builder at its entry block."""
    fn = ir.Function(module, KERNEL_TYPE, symbol)
    fn.args[0].add_attribute("noalias")
    fn.attributes.add("nounwind")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def ir_text(module: ir.Module) -> str:
    """The module's LLVM IR without a target header (compile_ir_text adds the host's)."""
    return "\n".join(line for line in str(module).splitlines() if not line.startswith("target "))


class Library:
    """The kernels of one compiled module, kept loaded for the life of the process."""

    def __init__(self, functions: dict[str, KernelFn], tracker, text: str) -> None:
        self.functions = functions
        self.text = text
        self._tracker = tracker  # dropping it would unload the code under `functions`

    def __getitem__(self, symbol: str) -> KernelFn:
        return self.functions[symbol]


_lock = sync.lock(reentrant=True)
_libraries: dict[str, Library] = {}


def compiled(name: str, build: Callable[[ir.Module], list[str]]) -> Library:
    """The module `build` fills (returning its kernel symbols), compiled at most once.

    `name` must identify what `build` emits: the same name always gets the same library.
    """
    lib = _libraries.get(name)
    if lib is not None:
        return lib
    with _lock:  # reentrant: a build may compile another module
        lib = _libraries.get(name)
        if lib is None:
            module = ir.Module(name=name)
            symbols = build(module)
            text = ir_text(module)
            t = compiler.host_target()
            key = kernel_cache.key_of(name, text, t["triple"], t["cpu"], t["features"], t["llvm"])
            obj, _ = kernel_cache.fetch("cpu", key, lambda: compiler.compile_ir_text(text))
            addresses, tracker = compiler.load_object_symbols(
                obj, tuple(symbols), f"{name}_{key[:12]}"
            )
            functions = {s: kernel_fn(addresses[s], s, llvm=text) for s in symbols}
            lib = _libraries[name] = Library(functions, tracker, text)
        return lib
