"""A blocked factorization's launches, built once per layout and run again: a host program.

A blocked LU of 512 rows is about 30 launches, and building them (views, plans, argument
words, the nested blocks of paired launches) cost about as much Python as the kernels'
own time (det: 1.1 of 2.6 ms). Their argument words hold only sizes, strides, flags and
addresses: of the program's own scratch (panels' transposes, packing buffers, nested
blocks), and of the memory the call works on. So a program built for one layout runs on
any other memory of the same layout once those last words are moved (as JAX and tinygrad
replay a captured graph): `bind` finds them, the words inside the call's storages, and
`run` rewrites them when the storages differ from the last run's. A word is an address
of a storage exactly when it lies inside it: the other words are small integers, and
the program's scratch, blocks and kernels are other allocations.

`checked_out` keeps a few programs per key (the driver's: layout, thread count), the
least recently used keys going past MAX_KEYS or MAX_TOTAL_BYTES of scratch, all of them
on kael.empty_cache. A program is taken out while it runs, so two threads never share
one (or its scratch): a second thread on the same layout builds its own.
"""

from __future__ import annotations

import array
import contextlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kael.runtime import sync
from kael.runtime.allocator import block_capacity, on_empty_cache
from kael.runtime.device import CPU
from kael.runtime.dtypes import DType, uint8
from kael.runtime.launcher import launch_block
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl, host_ptr

MAX_KEYS = 32
MAX_PER_KEY = 2  # programs kept for one key (threads running the same layout at once)
MAX_KEPT_BYTES = 4 << 20  # the scratch a kept program may hold (larger ones run once)
MAX_TOTAL_BYTES = 32 << 20  # the scratch all kept programs hold (the least recent go)


@dataclass(frozen=True, slots=True)
class Step:
    """One launch, ready: the kernel, its argument block, work items, the bytes that
    decide the split over the pool (launcher.run_block), the items' alignment, the flops
    its launch record shows, and the nested blocks its block points to."""

    fn: object
    block: array.array
    items: int
    moved: int
    align: int = 1
    flops: int = 0
    nested: tuple[array.array, ...] = ()

    @staticmethod
    def of(fn, words: Sequence[int], items: int, moved: int, align: int = 1, flops: int = 0):
        return Step(fn, array.array("q", words), items, moved, align, flops)

    def __call__(self) -> None:
        launch_block(self.fn, self.block, self.items, self.moved, self.align, flops=self.flops)


class Program:
    """Steps run in order; the scratch they use (`keep`); and the words that address the
    memory the program works on (see bind)."""

    __slots__ = ("steps", "keep", "kept_bytes", "_moves", "_bases", "_shared")

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.keep: list = []
        self.kept_bytes = 0
        self._moves: list[tuple[array.array, int, int, int]] = []
        self._bases: tuple[int, ...] = ()
        # (address, bytes) of the buffer `shared` hands out, and of the one beside it
        self._shared = [(0, 0), (0, 0)]

    def buffer(self, nbytes: int) -> int:
        """The address of `nbytes` of scratch that lives as long as the program (0 for 0)."""
        return self.scratch(nbytes, uint8).data_ptr() if nbytes else 0

    def shared(self, nbytes: int, beside: bool = False) -> int:
        """The address of `nbytes` of scratch for a step that runs beside no other step
        using it (a product's packing, one product after another): one buffer for all,
        replaced by a larger one where a step asks for more (0 for 0). `beside`: another
        such buffer, for the steps chained beside those (a look-ahead's)."""
        if nbytes > self._shared[beside][1]:
            self._shared[beside] = (self.buffer(nbytes), nbytes)
        return self._shared[beside][0] if nbytes else 0

    def scratch(self, count: int, dtype: DType) -> TensorImpl:
        """`count` elements of scratch that live as long as the program."""
        nbytes = count * dtype.itemsize
        impl = TensorImpl.of_tuples(Storage(nbytes), (count,), (1,), 0, dtype, CPU)
        self.keep.append(impl)
        self.kept_bytes += block_capacity(nbytes)  # what the allocator holds for it
        return impl

    def add(self, *steps: Step) -> None:
        self.steps.extend(steps)

    def bind(self, regions: Sequence[tuple[int, int]]) -> None:
        """Note every word of the steps' blocks inside one of `regions` ((base, bytes) of
        the storages the program works on) as an offset from its base, for `run`."""
        for step in self.steps:
            for block in (step.block, *step.nested):
                for i, word in enumerate(block):
                    for r, (base, size) in enumerate(regions):
                        if base <= word < base + size:
                            self._moves.append((block, i, r, word - base))
                            break
        self._bases = tuple(base for base, _ in regions)

    def run(self, bases: tuple[int, ...] = ()) -> None:
        """The steps, on the storages at `bases` (bind's regions' order) when given."""
        if bases and bases != self._bases:
            for block, i, r, offset in self._moves:
                block[i] = bases[r] + offset
            self._bases = bases
        for step in self.steps:
            step()

    @property
    def reusable(self) -> bool:
        """Whether its scratch is small enough to keep it."""
        return self.kept_bytes <= MAX_KEPT_BYTES


def storages(*impls: TensorImpl) -> tuple[tuple, tuple[tuple[int, int], ...]]:
    """(layout, regions) of the host impls a program works on: per impl its dtype, shape,
    strides, offset and which of their distinct storages it views (for the key), and
    those storages' (address, bytes) (for bind and run)."""
    seen: list[Storage] = []
    layout = []
    for t in impls:
        host_ptr(t, "program")  # host memory only
        s = t.storage
        index = next((i for i, known in enumerate(seen) if known is s), len(seen))
        if index == len(seen):
            seen.append(s)
        layout.append((t.dtype, t.shape, t.strides, t.offset, index))
    return tuple(layout), tuple((s.ptr, s.nbytes) for s in seen)


# key -> the programs kept for it, not running, the least recently used key first; the
# bytes of scratch they hold
_programs: OrderedDict[tuple, list[Program]] = OrderedDict()
_kept = [0]
_lock = sync.lock()


@contextlib.contextmanager
def checked_out(key: tuple, impls: Sequence[TensorImpl], build: Callable[..., Program]):
    """A program for `key` working on `impls` (see `storages`; `key` must hold what else
    its words depend on, such as the thread count), taken from those kept or built by
    build(*impls), run, and yielded; kept again after (when reusable)."""
    layout, regions = storages(*impls)
    key = (*key, layout)
    held = _take(key)
    if held is None:
        held = build(*impls)
        held.bind(regions)
    held.run(tuple(base for base, _ in regions))
    try:
        yield held
    finally:
        if held.reusable:
            _keep(key, held)


def run(key: tuple, impls: Sequence[TensorImpl], build: Callable[..., Program]) -> None:
    """Run the program `checked_out` gives, for its effects alone."""
    with checked_out(key, impls, build):
        pass


def _take(key: tuple) -> Program | None:
    with _lock:
        kept = _programs.get(key)
        if not kept:
            return None
        _programs.move_to_end(key)
        held = kept.pop()
        _kept[0] -= held.kept_bytes
        return held


def _keep(key: tuple, held: Program) -> None:
    with _lock:
        kept = _programs.setdefault(key, [])
        _programs.move_to_end(key)
        if len(kept) >= MAX_PER_KEY:
            return
        kept.append(held)
        _kept[0] += held.kept_bytes
        while len(_programs) > 1 and (len(_programs) > MAX_KEYS or _kept[0] > MAX_TOTAL_BYTES):
            _, dropped = _programs.popitem(last=False)
            _kept[0] -= sum(p.kept_bytes for p in dropped)


def clear() -> None:
    """Drop every kept program (and the memory it holds): kael.empty_cache does."""
    with _lock:
        _programs.clear()
        _kept[0] = 0


def kept() -> list[Program]:
    """The programs kept now."""
    with _lock:
        return [p for programs in _programs.values() for p in programs]


on_empty_cache(clear)
