"""Hand-written CPU kernels: LLVM functions built directly with llvmlite, not from a Kernel.

Ops whose loops the IR cannot express (multinomial's sampler, scans, row kernels,
gathers, matrix products) build their functions here. Each function has a kernel's
signature, `void f(i64* args, i64 begin, i64 end)`, so runtime/launcher.py splits its
work items over the thread pool like any kernel's. `compiled(name, build)` compiles a
module once per process and caches its object code on disk, keyed by the module's name,
kael's version and the fingerprint of the code generators' sources (CODEGEN_SCHEMA), so
a new process loads it without building or printing the module (about 60 ms for the
gemm module); its LLVM IR text is built again only when inspection asks for it.
Builders that stay target-neutral (index walks, nonzero, scans, the merge sort) run on a
GPU too: callers go through `runner_for(device)`, whose runners give scratch words, reads
and launches on the host (HostRunner) or the device (codegen/ptx/handwritten.py).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Literal

import llvmlite
from llvmlite import ir

from kael.codegen.cpu import compiler, tiers
from kael.codegen.lowering import CODEGEN_SCHEMA
from kael.runtime import kernel_cache, sync
from kael.runtime.launcher import KernelFn, launch
from kael.runtime.version import __version__

Passes = tuple[str, ...] | None | Literal["auto"]
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
    """The module's LLVM IR without a target header (compiler.with_target adds the host's)."""
    return "\n".join(line for line in str(module).splitlines() if not line.startswith("target "))


class Library:
    """The kernels of one compiled module, kept loaded for the life of the process."""

    def __init__(self, name: str, build: Callable, passes: Passes) -> None:
        self.name = name
        self.passes = passes
        self.functions: dict[str, KernelFn] = {}
        self._build = build
        self._text: str | None = None
        self._tracker = None  # dropping it would unload the code under `functions`

    def load(self, linked: tiers.Linked) -> None:
        self._tracker = linked
        self.functions = {s: linked.fn(s, library=self) for s in linked.addresses}

    @property
    def text(self) -> str:
        """The module's LLVM IR (built again when the object code came from the disk)."""
        if self._text is None:
            with _lock:
                if self._text is None:
                    self._text = _module(self.name, self._build)[1]
        return self._text

    def optimization(self) -> tuple[str, ...] | None:
        """The passes the module is optimized by (compiler._optimized: None is O3)."""
        return compiler.kernel_passes(self.text) if self.passes == "auto" else self.passes

    def assembly(self) -> str:
        """The module's host assembly, as it was compiled."""
        return compiler.assembly_of_ir_text(self.text, self.optimization())

    def __getitem__(self, symbol: str) -> KernelFn:
        return self.functions[symbol]


_lock = sync.lock(reentrant=True)
LIBRARY_KIND = "cpu-library"  # payload: the symbols, one a line, NUL, the object code
_libraries: dict[str, Library] = {}


def _module(name: str, build: Callable[[ir.Module], list[str]]) -> tuple[list[str], str]:
    module = ir.Module(name=name)
    symbols = build(module)
    return symbols, ir_text(module)


def compiled(
    name: str,
    build: Callable[[ir.Module], list[str]],
    passes: Passes = "auto",
    tiered: bool = True,
) -> Library:
    """The module `build` fills (returning its kernel symbols), compiled at most once.

    `name` must identify what `build` emits: the same name always gets the same library.
    `passes`: "auto" optimizes a module kael vectorized itself by compiler.KERNEL_PASSES
    and a scalar one by O3 (whose loop vectorizer may find work), as for generated
    kernels; or a pass list, or None for O3. `tiered`: linked at tier 0 first, promoted
    on its first large launch (codegen/cpu/tiers.py); False links the optimized code at
    once (the matrix products, whose work is not told by the bytes they move).
    """
    lib = _libraries.get(name)
    if lib is not None:
        return lib
    with _lock:  # reentrant: a build may compile another module
        lib = _libraries.get(name)
        if lib is None:
            t = compiler.host_target()
            key = kernel_cache.key_of(
                name, repr(passes), CODEGEN_SCHEMA, __version__, llvmlite.__version__, t["triple"],
                t["cpu"], t["features"], t["llvm"],
            )  # fmt: skip
            lib = Library(name, build, passes)

            def source() -> tuple[list[str], str]:
                if lib._text is None or not lib.functions:
                    symbols, lib._text = _module(name, build)
                else:  # a promotion: the tier-0 build kept the text, and linked the symbols
                    symbols = list(lib.functions)
                return symbols, compiler.with_target(lib._text)

            lib.load(tiers.link(
                LIBRARY_KIND, key, f"{name}_{key[:12]}", source,
                lambda _: lib.optimization(), optimized=not tiered,
            ))  # fmt: skip
            _libraries[name] = lib
        return lib


class HostRunner:
    """Runs the kernels on the CPU for one op call: scratch words in host memory, launches
    on the thread pool. codegen/ptx/handwritten.py's DeviceRunner runs the same kernels,
    built by the same builders, on the GPU. Cheap to make: small index ops make one a call."""

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: list = []

    def scratch(self, values: Sequence[int]) -> int:
        if len(values) == 1:  # an error word: the commonest scratch
            host = ctypes.c_int64(values[0])
        else:
            host = (ctypes.c_int64 * max(1, len(values)))(*values)
        self._kept.append(host)
        return ctypes.addressof(host)

    def space(self, count: int) -> int:
        """Room for `count` int64 words (zeroed) while the call runs; its address."""
        host = (ctypes.c_int64 * max(1, count))()
        self._kept.append(host)
        return ctypes.addressof(host)

    def read(self, address: int, count: int) -> list[int]:
        if count == 1:
            return [ctypes.c_int64.from_address(address).value]
        return list((ctypes.c_int64 * count).from_address(address))

    def run(self, name, build, symbol, words, items, moved, align=None, serial=False, kernel=None):
        """Launch `symbol` of module `name` over `items` work items (`serial`: inline); the
        same signature as the GPU's runner (`kernel` is for its launch record). Returns the
        kernel it launched (for the fast door to replay)."""
        fn = (_libraries.get(name) or compiled(name, build))[symbol]
        if align is None:
            launch(fn, words, items, 0 if serial else moved)
        else:
            launch(fn, words, items, 0 if serial else moved, align=align)
        return fn

    def close(self) -> None:
        self._kept.clear()


def runner_for(device) -> HostRunner:
    """The runner for tensors on `device` (None: the CPU); close() it after the call."""
    if device is None or device.type == "cpu":
        return HostRunner()  # a plain object: cheaper than any pooling
    from kael.codegen.ptx.handwritten import DeviceRunner  # the GPU side of these kernels

    return DeviceRunner()
