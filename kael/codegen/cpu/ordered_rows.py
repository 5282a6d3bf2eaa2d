"""What the kernels that order rows by radix.py's ordered words share (rank.py, top.py):
the kernel's preamble, a module of one kernel per key form of a width, and the launch."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from llvmlite import ir

from kael.codegen.cpu import handwritten
from kael.codegen.cpu.radix import form_of, forms, ordered
from kael.codegen.lowering import i64, splat, targets_gpu
from kael.runtime.dtypes import DType

I64 = ir.IntType(64)
VECTOR_BITS = 512  # a CPU compare's keys at once: a vector of this many bits
# Every such kernel's first words: the keys, the int64 positions it writes, the row length
# and the flip (all ones: descending); a kernel's own words follow.
FIRST_WORDS = ("keys", "out", "n", "flip")


class RowKernel(NamedTuple):
    """A row kernel's function, builder and words, its key and position pointers, its
    keys' word type, order(bits): a key's (or a vector of keys') ordered word, flipped,
    and word(p, base): key p of the row at `base` so."""

    fn: ir.Function
    b: ir.IRBuilder
    w: dict[str, ir.Value]
    keys: ir.Value
    out: ir.Value
    word_type: ir.IntType
    order: Callable[[ir.Value], ir.Value]
    word: Callable[[ir.Value, ir.Value], ir.Value]


def lanes(module: ir.Module, width: int) -> int:
    """Keys of `width` bits a compare takes at once: a vector on the CPU, one on a GPU."""
    return 1 if targets_gpu(module) else VECTOR_BITS // width


def _symbol(prefix: str, width: int, form: str) -> str:
    return f"kael_{prefix}_{form}_u{width}"


def row_kernel(module: ir.Module, prefix: str, width: int, form: str, own: tuple) -> RowKernel:
    """Begin the kernel `prefix` for keys of `width` bits in `form`, whose words are
    FIRST_WORDS and then `own`."""
    fn, b = handwritten.kernel_function(module, _symbol(prefix, width, form))
    args = fn.args[0]
    names = (*FIRST_WORDS, *own)
    w = {name: b.load(b.gep(args, [i64(i)]), name=name) for i, name in enumerate(names)}
    word_type = ir.IntType(width)
    keys = b.inttoptr(w["keys"], word_type.as_pointer())
    flip = b.trunc(w["flip"], word_type)

    def order(bits: ir.Value) -> ir.Value:
        lanes = bits.type.count if isinstance(bits.type, ir.VectorType) else 1
        return b.xor(ordered(b, bits, form), flip if lanes == 1 else splat(b, flip, lanes))

    def word(p: ir.Value, base: ir.Value) -> ir.Value:
        return order(b.load(b.gep(keys, [b.add(base, p)])))

    out = b.inttoptr(w["out"], I64.as_pointer())
    return RowKernel(fn, b, w, keys, out, word_type, order, word)


def spec(prefix: str, width: int, build: Callable[[ir.Module, int, str], str]) -> tuple:
    """The module name and builder of kernel `prefix` for every form of keys `width` bits
    wide (`build(module, width, form)` emits one and returns its symbol)."""
    return f"kael_{prefix}_u{width}", lambda module: [
        build(module, width, form) for form in forms(width)
    ]


def launch(
    runner, prefix: str, build: Callable, dtype: DType, first: list[int], own: list[int],
    rows: int, moved: int,
) -> tuple | None:  # fmt: skip
    """Run kernel `prefix` for `dtype`'s keys over `rows` rows, a row a work item, with
    words `first` (keys, out, n, descending) and then `own`; returns (kernel, words, rows,
    bytes moved) on the host (for the fast door to replay), else None."""
    keys, out, n, descending = first
    width = 8 * dtype.itemsize
    name, module_build = spec(prefix, width, build)
    words = [keys, out, n, -1 if descending else 0, *own]
    symbol = _symbol(prefix, width, form_of(dtype))
    fn = runner.run(name, module_build, symbol, words, rows, moved, align=1)
    return None if fn is None else (fn, words, rows, moved)
