"""Random sampling: every value comes from a kael kernel running Philox4x32-10.

One global generator holds a seed and an offset, as PyTorch's Philox generators do. A
call that needs n counters reserves [offset, offset + n) under a lock and moves the
offset past them; element i of its output is then a pure function of (seed, offset + i)
through the `philox` ops (stream layout in kael/codegen/philox.py). So results depend
neither on the thread count nor on the device, and float32 and float64 see one sequence:
floats are computed in float64 from 53 random bits, then rounded. dropout needs only a
keep-or-drop per element: it draws 32 bits each, eight to a block (`_word`).
"""

from __future__ import annotations

import functools
import math
import os
import struct
import threading
from collections.abc import Callable

import numpy as np

from kael.codegen.cpu import sampling
from kael.codegen.philox import GROUP_BLOCKS
from kael.frontend import eager, factories, fastpath, index_ops, tracing, views
from kael.frontend import elementwise as ew
from kael.frontend.elementwise import broadcast_shapes
from kael.frontend.outputs import bool_arg, check_writable, device_of, output, tensor_arg
from kael.frontend.tensor import Size, Tensor, clone_impl, empty_impl
from kael.ir import graph as g
from kael.ir.ops import BINARY_OPS
from kael.runtime import sync, user_warning
from kael.runtime.convert import to_float32, to_half_precision
from kael.runtime.device import CPU, Device, parse_device
from kael.runtime.dtypes import (
    INT64_MAX,
    INT64_MIN,
    DType,
    as_dtype,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    get_default_dtype,
    int32,
    int64,
    uint8,
)
from kael.runtime.errors import TypeError, UnsupportedDtype, ValueError
from kael.runtime.launcher import count_launch
from kael.runtime.tensor_impl import TensorImpl, format_shape
from kael.runtime.typeinfo import finfo, iinfo

DEFAULT_SEED = 0  # the book's: a program that never seeds still repeats itself
_U64 = 1 << 64
_BELOW_ONE_F32 = float(np.nextafter(np.float32(1), np.float32(0)))


def _signed(word: int) -> int:
    """An unsigned 64-bit value as the signed int64 of the same bits (kernel argument words)."""
    return word - _U64 if word > INT64_MAX else word


def _generator_at(device: str, seed: int, offset: int) -> Generator:
    """A Generator on `device` at (seed, offset): what a pickled one rebuilds."""
    made = Generator(device)
    made.restore(seed, offset)
    return made


class Generator:
    """A random stream: its seed and Philox offset (the next n draws get counters [offset,
    offset + n)). PyTorch's API: manual_seed, seed, initial_seed, get_state and set_state;
    the same seed gives the same values on every device, so `device` only records where
    its user said it draws."""

    def __init__(self, device: str | Device = "cpu") -> None:
        self.device = parse_device(device)
        self.lock = sync.lock(fork_rank=sync.GENERATOR_RANK, owner=self)
        self._seed = DEFAULT_SEED
        self._offset = 0
        self._mine = threading.local()  # counters reserved by each thread, for drawn_here

    def manual_seed(self, seed) -> Generator:
        """Reseed and rewind; torch's range: [-2**63, 2**64), negatives wrap. Returns self."""
        seed = seed_arg(seed)
        tracing.reseed(self, seed)
        with self.lock:
            self._seed, self._offset = seed, 0
        return self

    def seed(self) -> int:
        """Reseed from the operating system's entropy; returns the new seed."""
        tracing.data_dependent("Generator.seed() (a new seed from the OS at each call)")
        seed = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        tracing.generator_read(self)
        with self.lock:
            return self._seed

    def get_state(self) -> Tensor:
        """The stream's state as 16 uint8 bytes (seed and offset, little-endian), as
        PyTorch's is a ByteTensor: set_state takes it back."""
        tracing.generator_read(self)
        seed, offset = self.position()
        raw = seed.to_bytes(8, "little") + offset.to_bytes(8, "little")
        return factories.tensor(list(raw), dtype=uint8)

    def set_state(self, new_state: Tensor) -> None:
        """Restore a state get_state returned; TypeError or ValueError for anything else."""
        if not isinstance(new_state, Tensor) or new_state.dtype is not uint8:
            got = new_state.dtype if isinstance(new_state, Tensor) else type(new_state).__name__
            raise TypeError(f"set_state expects a uint8 tensor from get_state, got {got}")
        if new_state.shape != (16,):
            raise ValueError(f"set_state expects 16 bytes, got shape {list(new_state.shape)}")
        raw = bytes(new_state.tolist())
        seed, offset = int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")
        tracing.reseed(self, seed, offset)  # a traced set_state is a step of the plan
        self.restore(seed, offset)

    def __reduce__(self):
        """Pickled (kael.save, copy, a worker's queue) as its device and stream position, as
        torch's Generator pickles its state: the copy draws what the original would next."""
        return (_generator_at, (str(self.device), *self.position()))

    def position(self) -> tuple[int, int]:
        """(seed, offset)."""
        with self.lock:
            return self._seed, self._offset

    def restore(self, seed: int, offset: int) -> None:
        with self.lock:
            self._seed, self._offset = seed % _U64, offset % _U64

    def rewind(self, state: tuple[int, int], count: int) -> bool:
        """Put the generator back to `state` if exactly `count` counters were reserved since
        (no other thread drew meanwhile, whose draws a rewind would repeat)."""
        seed, offset = state
        with self.lock:
            if (self._seed, self._offset) != (seed, (offset + count) % _U64):
                return False
            self._seed, self._offset = seed, offset
            return True

    def reserve(self, count: int) -> tuple[int, int]:
        """(seed, first counter) of `count` fresh counters; the offset moves past them."""
        with self.lock:
            first = self._offset
            self._offset = (first + count) % _U64
            seed = self._seed
        self._mine.count = getattr(self._mine, "count", 0) + count
        return seed, first

    def drawn_here(self) -> int:
        """How many counters the calling thread has reserved from this generator: what a
        step drew itself, where the offset's move also counts other threads' draws."""
        return getattr(self._mine, "count", 0)

    def __repr__(self) -> str:
        return f"kael.Generator(device={str(self.device)!r})"


# Its lock is held across fork() (runtime/sync.py), as the book's pthread_atfork does.
default_generator = Generator()


def generator_arg(generator, op: str) -> Generator:
    """`generator=` of a sampler: a kael.Generator, or None for the default one."""
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}: generator must be a kael.Generator, got {type(generator).__name__}")
    return generator


def draw_marks(values) -> list[tuple[Generator, tuple[int, int], int]]:
    """(generator, position, drawn_here) of the default generator and of each Generator
    among `values`, before an op that may draw from them: with drawn_here after it, what
    the op drew itself, which a rollback or a retrace gives back."""
    if not values:
        g = default_generator
        return [(g, g.position(), g.drawn_here())]
    found = {id(default_generator): default_generator}
    found.update((id(g), g) for g in values if type(g) is Generator)
    return [(g, g.position(), g.drawn_here()) for g in found.values()]


def reserve_words(count: int, generator: Generator | None = None) -> tuple[int, int]:
    """The kernel words (seed, first counter) of `count` fresh counters of `generator`."""
    seed, offset = (generator or default_generator).reserve(count)
    return _signed(seed), _signed(offset)


def seed_arg(seed) -> int:
    """A seed as torch takes it: an int in [-2**63, 2**64), negatives wrapped to uint64."""
    seed = views.as_int(seed, "seed")
    if not INT64_MIN <= seed < _U64:
        raise ValueError(f"manual_seed expects a seed in [-2**63, 2**64), got seed={seed}")
    return seed % _U64


def manual_seed(seed) -> Generator:
    """Reseed and rewind the default generator (returned, as torch does)."""
    return default_generator.manual_seed(seed)


def initial_seed() -> int:
    """The seed last given to manual_seed (as an unsigned 64-bit value)."""
    return default_generator.initial_seed()


# ---- kernel graphs ----------------------------------------------------------------------------


def _op(op: str, a: g.Node, b: g.Node) -> g.Binary:
    return g.Binary(bool_ if BINARY_OPS[op] == "bool" else a.dtype, (), op, a, b)


def _const(dtype: DType, value) -> g.Const:
    return g.Const(dtype, (), value)


def _scalar(dtype: DType, name: str) -> g.Scalar:
    return g.Scalar(dtype, (), name)


def _f(value: float) -> g.Const:
    return _const(float64, value)


def _block() -> tuple[g.Node, g.Node]:
    """The two 64-bit halves of this element's Philox block: counter offset + index, key seed."""
    counter = _op("add", g.Position(int64, (), 0), _scalar(int64, "offset"))
    seed = _scalar(int64, "seed")
    return _op("philox", counter, seed), _op("philox_hi", counter, seed)


def _word() -> g.Node:
    """This element's 32-bit Philox draw (an int64 in [0, 2**32)): draw base + i of
    kael/codegen/philox.py's layout (eight to a block, two to a word), base the offset
    rounded up to a multiple of 16 blocks (so vector code finds whole groups). The draw
    counter 8 base + i keeps 64 bits, so these blocks are counted modulo 2**61: a stream set
    past offset 2**61 (set_state) draws dropout's masks of the offset 2**61 lower."""
    groups = _const(int64, -GROUP_BLOCKS)
    base = _op(
        "bitand", _op("add", _scalar(int64, "offset"), _const(int64, GROUP_BLOCKS - 1)), groups
    )
    counter = _op("add", g.Position(int64, (), 0), _op("shl", base, _const(int64, 3)))
    return _op("philox32", counter, _scalar(int64, "seed"))


def _unit(bits: g.Node) -> g.Node:
    """The float64 in [0, 1) of the top 53 of 64 random bits: (bits >> 11) * 2**-53."""
    top = _op("mulhi_u", bits, _const(int64, 1 << 53))
    return _op("mul", g.Cast(float64, (), top), _const(float64, 2.0**-53))


def _as_float(value: g.Node, dtype: DType, below_one: bool = False) -> g.Node:
    """A float64 value rounded to `dtype`; `below_one` maps a float32 1.0 to the float below,
    and a uniform float16/bfloat16 keeps the dtype's significand bits of u (as PyTorch does:
    multiples of 2**-11 or 2**-8 below 1, never rounded up to 1)."""
    if below_one and dtype.is_half:
        digits = 11 if dtype is float16 else 8
        steps = g.Unary(float64, (), "floor", _op("mul", value, _const(float64, 2.0**digits)))
        return g.Cast(dtype, (), _op("mul", steps, _const(float64, 2.0**-digits)))
    out = g.Cast(dtype, (), value) if dtype is not float64 else value
    if not below_one or dtype is float64:
        return out
    one = _op("eq", out, _const(float32, 1.0))
    return g.Where(float32, (), one, _const(float32, _BELOW_ONE_F32), out)


def _normal() -> g.Node:
    """Box-Muller in float64: sqrt(-2 log(1 - u1)) * cos(2 pi (u2 - 1/2)), u1 and u2 in [0, 1)."""
    lo, hi = _block()
    radius_sq = _op(
        "mul",
        _const(float64, -2.0),
        g.Unary(float64, (), "log", _op("sub", _const(float64, 1.0), _unit(lo))),
    )
    angle = _op("mul", _op("sub", _unit(hi), _const(float64, 0.5)), _const(float64, 2 * math.pi))
    # |angle| <= pi: cos without the reduction of huge arguments (vmath's cos_bounded)
    cosine = g.Unary(float64, (), "cos_bounded", angle)
    return _op("mul", g.Unary(float64, (), "sqrt", radius_sq), cosine)


def _below(span: g.Node) -> g.Node:
    """floor(x * span / 2**128), x the block's 128 random bits, span unsigned: unbiased to 2**-64.

    With x = hi * 2**64 + lo it is mulhi(hi, span) plus the carry out of
    hi * span mod 2**64 + mulhi(lo, span); an unsigned a < b is signed a + MIN < b + MIN.
    """
    lo, hi = _block()
    low_word = _op("mul", hi, span)
    middle = _op("add", low_word, _op("mulhi_u", lo, span))
    flip = _const(int64, INT64_MIN)
    carry = _op("lt", _op("add", middle, flip), _op("add", low_word, flip))
    return _op("add", _op("mulhi_u", hi, span), g.Cast(int64, (), carry))


def _generate(
    key: tuple,
    build: Callable[[], g.Node],
    out: TensorImpl,
    scalars: dict | None = None,
    ins: tuple[TensorImpl, ...] = (),
    generator: Generator | None = None,
    one_word: bool = False,
) -> bool:
    """Fill the new contiguous `out` with `build`'s values over fresh counters; returns the flag.

    The kernel runs on a flat view, so the position is the row-major element index; inputs
    are contiguous and of out's shape. `one_word`: elements draw 32 bits each (_word),
    eight to a block, from an offset rounded up to a multiple of GROUP_BLOCKS.
    """
    n = out.numel()
    count = _drawn_blocks(n) + GROUP_BLOCKS - 1 if one_word and n else n
    seed, offset = tracing.reserve(count, generator)
    if n == 0:
        return False
    door = _door_key(key, n, out, ins, scalars)
    kept = _DOOR.get(door) if door is not None else None
    if kept is not None and kept is not _UNSERVED:
        count_launch(kept[2])  # its replays count toward its optimized code
        size = out.dtype.itemsize
        ptrs = [t.storage.ptr + t.offset * t.dtype.itemsize for t in ins]
        fastpath._native(kept[0].address, kept[1], out.storage.ptr + out.offset * size,
                         *ptrs, seed, offset)  # fmt: skip
        return False
    flat = [views.derive(t, (n,), (1,), t.offset) for t in (out, *ins)]
    entry = eager.template(("random", *key), lambda: (key[0], [build()]))
    words = {"seed": seed, "offset": offset, **(scalars or {})}
    flag = eager.run(entry, flat[:1], flat[1:], words)
    if door is not None and kept is None and len(_DOOR) < _DOOR_MAX:
        fixed = scalars or {}
        found = fastpath.inline_launch(entry, flat[0], flat[1:], ("seed", "offset"), fixed)
        _DOOR[door] = _UNSERVED if found is None else found
    return flag


def _drawn_blocks(n: int) -> int:
    """Blocks that n draws from a group boundary touch (kael/codegen/philox.py's layout:
    each whole group of 128 draws its 16 blocks; a last partial group of r draws the first
    min(r, 16) of its group's blocks). A call reserves that many and GROUP_BLOCKS - 1 more,
    for its start rounded up to a group: it never reaches the next call's counters."""
    groups, rest = divmod(n, 8 * GROUP_BLOCKS)
    return groups * GROUP_BLOCKS + min(rest, GROUP_BLOCKS)


# The fast door of small fills: per sampler key, element count, the inputs' dtypes and the
# other scalars' values, the kernel's launch over the flat layout (a flag-free kernel that
# runs inline), replayed with the call's addresses and counters (1 thread, one run: randn(4,
# 16) 14.6 -> 9.9 us, dropout 23.8 -> 17.7 on a loaded machine; about 5 us less a call).
_DOOR: dict[tuple, tuple] = {}
_DOOR_MAX = 4096
_UNSERVED = (None, 0, None)


def _door_key(key: tuple, n: int, out: TensorImpl, ins: tuple, scalars: dict | None):
    """The door's key of a fill of `out` (a new dense host tensor) from dense `ins`, or
    None where the full door must run it (a trace, a recorder, a GPU, KAEL_DEBUG)."""
    if not fastpath._open() or out.device is not CPU:
        return None
    for t in ins:
        if t.device is not CPU or not t.is_contiguous():
            return None
    extra = fastpath.typed_key(tuple(scalars.values())) if scalars else ()
    if extra is None:
        return None
    return (key, n, tuple(t.dtype for t in ins), tuple(scalars) if scalars else (), extra)


# ---- floating samplers ------------------------------------------------------------------------


def _floating(name: str, dtype) -> DType:
    dtype = factories.dtype_or(dtype, get_default_dtype())
    if not (dtype.is_floating_point or dtype.is_complex):
        raise UnsupportedDtype(f"{name} only supports floating point dtypes, got {dtype}")
    return dtype


def _uniform() -> g.Node:
    return _unit(_block()[0])


# The float samplers by name: the graph of one element in a float dtype.
_FLOAT_SAMPLERS: dict[str, Callable[[DType], g.Node]] = {
    "rand": lambda dtype: _as_float(_uniform(), dtype, below_one=True),
    "randn": lambda dtype: _as_float(_normal(), dtype),
}


def _parts_of(t: Tensor, sample: Callable[[Tensor], object]) -> Tensor:
    """t (complex) with `sample` drawn into the float view of its real and imaginary parts."""
    from kael.frontend.complex import float_view

    sample(Tensor(float_view(t._impl)))
    return t


def _fill(name: str, t: Tensor, generator: Generator | None = None) -> Tensor:
    """The float sampler `name` into the new tensor t; a complex t draws its parts, each
    N(0, 1/2) for randn (unit variance in all, as PyTorch's complex normal)."""
    if t.dtype.is_complex:

        def parts_of_unit_variance(parts: Tensor) -> None:
            _fill(name, parts, generator)
            if name == "randn":
                parts.mul_(math.sqrt(0.5))

        return _parts_of(t, parts_of_unit_variance)
    _generate((name, t.dtype), lambda: _FLOAT_SAMPLERS[name](t.dtype), t._impl, generator=generator)
    return t


def rand(*size, generator=None, dtype=None, device=None) -> Tensor:
    """Uniform samples in [0, 1) (the default dtype unless told otherwise; never 1.0)."""
    gen = generator_arg(generator, "rand")
    return _fill("rand", factories.new_tensor(size, _floating("rand", dtype), device), gen)


def randn(*size, generator=None, dtype=None, device=None) -> Tensor:
    """Standard normal samples (Box-Muller in float64)."""
    gen = generator_arg(generator, "randn")
    return _fill("randn", factories.new_tensor(size, _floating("randn", dtype), device), gen)


def rand_like(
    input: Tensor, *, generator=None, dtype=None, device=None, memory_format=None
) -> Tensor:
    """rand in input's shape (and dtype, device and layout unless told otherwise)."""
    return _sampled_like("rand", input, generator, dtype, device, memory_format)


def randn_like(
    input: Tensor, *, generator=None, dtype=None, device=None, memory_format=None
) -> Tensor:
    """randn in input's shape (and dtype, device and layout unless told otherwise)."""
    return _sampled_like("randn", input, generator, dtype, device, memory_format)


def _sampled_like(name: str, input, generator, dtype, device, memory_format) -> Tensor:
    op = f"{name}_like"
    input = tensor_arg(input, op)
    gen = generator_arg(generator, op)
    dtype = _floating(op, input.dtype if dtype is None else dtype)
    return _fill(name, factories.new_like(input, dtype, device, op, memory_format), gen)


def unit_from_bits(bits: Tensor, dtype: DType) -> Tensor:
    """rand's map from 64 random bits (an int64 tensor) to [0, 1), run on given bits.

    The kernel rand uses with the Philox bits replaced by an input, so tests can force
    the float32 edge (bits near 2**64 round up to 1.0f).
    """
    dtype = _floating("unit_from_bits", dtype)
    source = bits.contiguous()._impl
    out = empty_impl(source.shape, dtype, source.device)

    def build() -> tuple[str, list[g.Node]]:
        return "unit", [_as_float(_unit(g.Input(int64, (), "bits")), dtype, below_one=True)]

    eager.run(eager.template(("random", "unit_from_bits", dtype), build), [out], [source])
    return Tensor(out)


# ---- integers ---------------------------------------------------------------------------------


def _integer_dtype(name: str, dtype) -> DType:
    dtype = factories.dtype_or(dtype, int64)
    if dtype.is_bool or dtype.is_complex:
        raise TypeError(f"{name} does not support dtype {dtype}")
    return dtype


def randint(low=None, high=None, size=None, *, generator=None, dtype=None, device=None) -> Tensor:
    """Uniform integers in [low, high): randint(high, size) or randint(low, high, size)
    (randint(high=h, size=s) too)."""
    if size is None and isinstance(high, (tuple, list)):
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    elif low is None:
        low = 0
    if high is None:
        raise TypeError("randint() missing required argument 'high'")
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    low, high = views.as_int(low, "low"), views.as_int(high, "high")
    for name, value in (("low", low), ("high", high)):
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValueError(f"randint expects {name} in the int64 range, got {name}={value}")
    if low >= high:
        raise ValueError(f"randint expects low < high, got low={low}, high={high}")
    dtype = factories.dtype_or(dtype, int64)
    _bound_check(low, "from", dtype)
    _bound_check(high - 1, "to - 1", dtype)
    gen = generator_arg(generator, "randint")
    t = factories.new_tensor((size,), dtype, device)

    def build() -> g.Node:
        value = _op("add", _scalar(int64, "low"), _below(_scalar(int64, "span")))
        return g.Cast(dtype, (), value) if dtype is not int64 else value

    words = {"low": low, "span": _signed(high - low)}
    _generate(("randint", dtype), build, t._impl, words, generator=gen)
    return t


# The longest permutation each float dtype holds exactly (torch's limits; bfloat16 has none)
_EXACT_PERMUTATION = {"float16": (2049, "2049", "Half"), "float32": (2**24 + 1, "2^24+1", "Float"),
                      "float64": (2**53 + 1, "2^53+1", "Double")}  # fmt: skip


def _check_permutation_fits(n: int, dtype: DType) -> None:
    """kael.ValueError where randperm's values 0 .. n-1 do not fit dtype, as torch refuses."""
    if dtype.name in _EXACT_PERMUTATION:
        limit, written, name = _EXACT_PERMUTATION[dtype.name]
        if n > limit:
            raise ValueError(f"n cannot be greater than {written} for {name} type.")
    elif not dtype.is_floating_point and n - 1 > iinfo(dtype).max:
        raise ValueError(f"value cannot be converted to type {dtype.name}_t without overflow")


def randperm(n, *, generator=None, dtype=None, device=None) -> Tensor:
    """A random permutation of 0 .. n-1: kernel-drawn keys' stable order by kael's sort."""
    n = views.as_int(n, "n")
    if n < 0:
        raise ValueError(f"randperm expects n >= 0, got n={n}")
    dtype = _integer_dtype("randperm", dtype)
    _check_permutation_fits(n, dtype)
    gen = generator_arg(generator, "randperm")
    keys = factories.new_tensor((n,), int64, device)
    _generate(("randperm",), lambda: _block()[0], keys._impl, generator=gen)
    return index_ops.argsort(keys).to(dtype)


# ---- bernoulli --------------------------------------------------------------------------------


def _probability(p, op: str = "bernoulli") -> float:
    p = float(factories.as_number(p, "p"))
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op} expects p to be in [0, 1], but got p={p}")
    return p


def bernoulli(input, p=None, *, generator=None, dtype=None, device=None) -> Tensor:
    """1 with probability p, else 0: (rand in float64 < p) converted, as the book defines it.

    bernoulli(probs) draws one sample per element of a float tensor, in its dtype;
    bernoulli(t, p) uses one probability in t's shape and dtype; bernoulli(size, p) is the
    book's form (the default dtype unless told otherwise).
    """
    gen = generator_arg(generator, "bernoulli")
    if not isinstance(input, Tensor):
        if p is None:
            raise TypeError("bernoulli(size, p) needs a probability p")
        out = factories.new_tensor((input,), factories.dtype_or(dtype, get_default_dtype()), device)
        return _bernoulli_scalar(out, _probability(p), gen)
    if p is not None:
        return _bernoulli_scalar(factories.new_like(input, dtype, device), _probability(p), gen)
    if not input.dtype.is_floating_point:
        raise TypeError(f"bernoulli expects floating point probabilities, got {input.dtype}")
    out = factories.new_like(input, dtype, device)
    probs = input.to(device=out.device).contiguous()
    pdt, odt = probs.dtype, out.dtype

    def build() -> g.Node:
        prob = (
            g.Cast(float64, (), g.Input(pdt, (), "p"))
            if pdt is not float64
            else g.Input(pdt, (), "p")
        )
        inside = g.Binary(
            bool_,
            (),
            "and",
            _op("ge", prob, _const(float64, 0.0)),
            _op("le", prob, _const(float64, 1.0)),
        )
        bad = g.Unary(bool_, (), "flag", g.Unary(bool_, (), "not", inside))
        value = g.Cast(odt, (), _op("lt", _uniform(), prob))
        return g.Where(odt, (), bad, _const(odt, 0), value)

    key = ("bernoulli_tensor", pdt, odt)
    if _generate(key, build, out._impl, ins=(probs._impl,), generator=gen):
        values = probs.cpu().numpy()
        first = np.unravel_index(np.flatnonzero(~((values >= 0) & (values <= 1)))[0], values.shape)
        raise ValueError(
            "bernoulli expects every probability in [0, 1], but got "
            f"p={values[first]} at position {[int(i) for i in first]}"
        )
    return out


def _bernoulli_scalar(out: Tensor, p: float, generator: Generator) -> Tensor:
    dtype = out.dtype

    def build() -> g.Node:
        return g.Cast(dtype, (), _op("lt", _uniform(), _scalar(float64, "p")))

    _generate(("bernoulli", dtype), build, out._impl, {"p": p}, generator=generator)
    return out


# ---- multinomial ------------------------------------------------------------------------------


def multinomial(input: Tensor, num_samples, replacement: bool = False, *, generator=None) -> Tensor:
    """Class indices drawn with probability proportional to the weights of each row.

    input is [K] or [B, K] with finite, non-negative float weights, at least one positive
    per row; without replacement num_samples cannot exceed a row's positive weights.
    The per-row loop is a compiled function (kael/codegen/cpu/sampling.py).
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial expects a Tensor of weights, got {type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"multinomial only supports floating point weights, got {input.dtype}")
    if input.ndim not in (1, 2):
        raise ValueError(f"multinomial expects 1-d or 2-d weights, got {input.ndim} dims")
    samples = views.as_int(num_samples, "num_samples")
    replacement = bool_arg(replacement, "multinomial", "replacement")
    if samples <= 0:
        raise ValueError(f"multinomial expects num_samples > 0, got num_samples={samples}")
    rows, classes = (1, *input.shape) if input.ndim == 1 else input.shape
    device = input.device
    given = _contiguous_float64(input._impl)
    weights = _summable(given, input.dtype)
    out = empty_impl((rows, samples), int64, device)
    scratch = empty_impl((rows, classes), float64, device)
    status = empty_impl((rows, 2), int64, device)
    gen = generator_arg(generator, "multinomial")
    if tracing.random_hook.reserve is not None and tracing.active() is None:
        words = tracing.reserve(rows * samples, gen)  # kael.vmap's randomness mode decides
    else:  # a hand-written kernel: it draws now, traced or not (an extern step)
        words = tuple(_signed(w) for w in gen.reserve(rows * samples))
    buffers = {"weights": weights, "out": out, "scratch": scratch, "status": status}
    bad = sampling.run(
        {name: impl.data_ptr() for name, impl in buffers.items()},
        rows,
        classes,
        samples,
        bool(replacement),
        *words,
        device,
    )
    if bad >= 0:
        given, status = Tensor(given).cpu(), Tensor(status).cpu()  # only to name the row
        raise _multinomial_error(given, status, bad, samples, input.ndim)
    return Tensor(out if input.ndim == 2 else views.derive(out, (samples,), (1,), 0))


# The smallest positive float64: a nonzero weight that scaling flushes to zero becomes this,
# signed, so that it stays drawable (or stays refused, if negative)
_SMALLEST_FLOAT64 = 5e-324


def _summable(weights: TensorImpl, dtype: DType) -> TensorImpl:
    """multinomial's float64 weights with each row that could overflow its running sum
    scaled down (float32 and half weights cannot: their sums run in float64).

    A row of K classes sums below 2**1023 when its largest weight is below 2**(1022 - s),
    s = K.bit_length(); a row with a larger one is scaled by 2**-(s + 1), a power of two,
    so the ratios of its normal weights stay exact.
    """
    if dtype is not float64 or not weights.numel():
        return weights
    w = Tensor(weights)
    shift = w.shape[-1].bit_length() + 1
    over = w.amax(-1, keepdim=True) >= 2.0 ** (1023 - shift)
    if not bool(over.any()):
        return weights
    scaled = w * ew.where(over, 2.0**-shift, 1.0)
    flushed = (scaled == 0) & (w != 0)
    return ew.where(flushed, w.sign() * _SMALLEST_FLOAT64, scaled).contiguous()._impl


def _contiguous_float64(impl: TensorImpl) -> TensorImpl:
    """impl's elements as a contiguous float64 impl on its device."""
    if impl.dtype is float64 and impl.is_contiguous():
        return impl
    return clone_impl(impl, float64)


def _multinomial_error(weights: Tensor, status: Tensor, row: int, samples: int, ndim: int):
    """The ValueError for the first bad row, from its status words."""
    code, detail = (int(v) for v in status.numpy()[row])
    where = f" in row {row}" if ndim == 2 else ""
    if code == sampling.BAD_WEIGHT:
        position = [row, detail] if ndim == 2 else [detail]
        value = weights.numpy().reshape(-1)[row * weights.shape[-1] + detail]
        return ValueError(
            f"multinomial expects finite, non-negative weights, got {value} at position {position}"
        )
    if code == sampling.NO_POSITIVE:
        return ValueError(f"multinomial expects at least one positive weight, got none{where}")
    return ValueError(
        f"multinomial without replacement cannot draw num_samples={samples} from "
        f"{detail} positive weights{where}"
    )


# ---- in-place samplers: Tensor.uniform_, normal_, exponential_, random_ ------------------------


def _sample_into(self: Tensor, op: str, key: tuple, build, scalars: dict, generator) -> Tensor:
    """self's elements replaced by a fresh sample (`build`'s graph in self's dtype)."""
    gen = generator_arg(generator, op)
    check_writable(self, op)
    fresh = factories.new_tensor((self.shape,), self.dtype, self.device)
    _generate((op, *key, self.dtype), build, fresh._impl, scalars, generator=gen)
    return _write_back(self, fresh)


def _write_back(self: Tensor, fresh: Tensor) -> Tensor:
    """self's elements replaced by fresh's (same shape), as an in-place op writes them."""
    eager.copy_into(self._impl, fresh._impl)
    self._impl.storage.bump_version()
    return self


def _float_arg(value, what: str) -> float:
    return float(factories.as_number(value, what))


def uniform_(self: Tensor, from_=0.0, to=1.0, *, generator=None) -> Tensor:
    """Uniform samples in [from_, to) (floating dtypes), in float64 and then rounded."""
    low, high = _float_arg(from_, "from"), _float_arg(to, "to")
    _floating("uniform_", self.dtype)
    if self.dtype.is_complex:  # each part drawn in [from, to), as PyTorch's
        return _parts_of(self, lambda parts: uniform_(parts, low, high, generator=generator))
    largest = self.dtype.largest
    for name, value in (("from", low), ("to", high)):
        if not -largest <= value <= largest:
            raise ValueError(f"uniform_: {name} is out of bounds for {self.dtype}, got {value}")
    if not low <= high:
        raise ValueError(
            f"uniform_ expects to return a [from, to) range, but found from={low} > to={high}"
        )
    if not high - low <= largest:
        raise ValueError(
            f"uniform_ expects to-from <= the largest {self.dtype}, but found to={high} and"
            f" from={low} which result in to-from to exceed the limit"
        )

    def build() -> g.Node:
        span = _op("mul", _uniform(), _scalar(float64, "span"))
        value = g.Cast(self.dtype, (), _op("add", _scalar(float64, "low"), span))
        reached = _op("ge", g.Cast(float64, (), value), _scalar(float64, "high"))
        return g.Where(self.dtype, (), reached, g.Cast(self.dtype, (), _scalar(float64, "top")),
                       value)  # fmt: skip

    top = _float_below(high, low, self.dtype)
    words = {"low": low, "span": high - low, "high": high, "top": top}
    return _sample_into(self, "uniform_", (), build, words, generator)


@functools.lru_cache(maxsize=256)
def _float_below(high: float, low: float, dtype: DType) -> float:
    """The largest `dtype` value below `high` (but not below `low`): what a draw that rounds
    up to `high` becomes, so uniform_ stays in [low, high) in the half types too. Host
    arithmetic on one number (a kernel here would end a trace)."""
    if dtype is bfloat16:  # float32's top half: truncated toward zero, stepped down if >= high
        bits = struct.unpack("<I", struct.pack("<f", high))[0] >> 16
        top = _bfloat16_value(bits)
        if top >= high:
            top = _bfloat16_value(bits - 1 if 0 < bits < 0x8000 else (bits + 1) | 0x8000)
    else:
        kind = dtype.numpy.type
        top = kind(high)
        if float(top) >= high:
            top = np.nextafter(top, kind(-math.inf))
        top = float(top)
    return max(top, low)


def _bfloat16_value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]


def normal_(self: Tensor, mean=0.0, std=1.0, *, generator=None) -> Tensor:
    """Normal samples mean + std * z (floating dtypes; std >= 0)."""
    mean, std = _float_arg(mean, "mean"), _float_arg(std, "std")
    _floating("normal_", self.dtype)
    if not std >= 0:
        raise ValueError(f"normal_ expects std >= 0.0, but found std {std}")
    if self.dtype.is_complex:  # each part N(mean, std^2 / 2), as PyTorch's
        spread = std * math.sqrt(0.5)
        return _parts_of(self, lambda parts: normal_(parts, mean, spread, generator=generator))

    def build() -> g.Node:
        z = _op("mul", _normal(), _scalar(float64, "std"))
        return g.Cast(self.dtype, (), _op("add", _scalar(float64, "mean"), z))

    return _sample_into(self, "normal_", (), build, {"mean": mean, "std": std}, generator)


def exponential_(self: Tensor, lambd=1.0, *, generator=None) -> Tensor:
    """Exponential samples -log(1 - u) / lambd (floating dtypes; lambd > 0)."""
    lambd = _float_arg(lambd, "lambd")
    _floating("exponential_", self.dtype)
    if not lambd > 0:
        raise ValueError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")

    def build() -> g.Node:
        tail = g.Unary(float64, (), "log", _op("sub", _const(float64, 1.0), _uniform()))
        value = _op("div", tail, _scalar(float64, "neg_lambd"))
        return g.Cast(self.dtype, (), value)

    return _sample_into(self, "exponential_", (), build, {"neg_lambd": -lambd}, generator)


def cauchy_(self: Tensor, median=0.0, sigma=1.0, *, generator=None) -> Tensor:
    """Cauchy samples median + sigma tan(pi (u - 1/2)) (floating dtypes; sigma > 0)."""
    median, sigma = _float_arg(median, "median"), _float_arg(sigma, "sigma")
    if not sigma > 0:
        raise ValueError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    _floating("cauchy_", self.dtype)

    def build() -> g.Node:
        angle = _op("mul", _op("sub", _uniform(), _f(0.5)), _f(math.pi))
        spread = _op("mul", _scalar(float64, "sigma"), g.Unary(float64, (), "tan", angle))
        return g.Cast(self.dtype, (), _op("add", _scalar(float64, "median"), spread))

    return _sample_into(self, "cauchy_", (), build, {"median": median, "sigma": sigma}, generator)


def log_normal_(self: Tensor, mean=1.0, std=2.0, *, generator=None) -> Tensor:
    """Log-normal samples exp(mean + std * z) (floating dtypes; std > 0)."""
    mean, std = _float_arg(mean, "mean"), _float_arg(std, "std")
    if not std > 0:
        raise ValueError(f"log_normal_ expects std > 0.0, but found std={std}")
    _floating("log_normal_", self.dtype)

    def build() -> g.Node:
        z = _op("add", _scalar(float64, "mean"), _op("mul", _normal(), _scalar(float64, "std")))
        return g.Cast(self.dtype, (), g.Unary(float64, (), "exp", z))

    return _sample_into(self, "log_normal_", (), build, {"mean": mean, "std": std}, generator)


def _largest_below(dtype: DType) -> float:
    """The largest float64 an integer dtype holds (int64's max itself rounds up past it)."""
    top = float(dtype.max)
    return top if top <= dtype.max else math.nextafter(top, 0.0)


def geometric_(self: Tensor, p, *, generator=None) -> Tensor:
    """Geometric samples on {1, 2, ...}: ceil(log(1 - u) / log1p(-p)) (p in (0, 1); any
    dtype but bool; an integer dtype's draws beyond its largest value are clamped to it)."""
    p = _float_arg(p, "p")
    if not 0.0 < p < 1.0:
        raise ValueError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if self.dtype.is_bool:
        raise TypeError("geometric_ does not support dtype bool")
    dtype = self.dtype

    def build() -> g.Node:
        tail = g.Unary(float64, (), "log", _op("sub", _f(1.0), _uniform()))
        value = g.Unary(float64, (), "ceil", _op("div", tail, _scalar(float64, "log_q")))
        value = _op("max", value, _f(1.0))  # u = 0 gives log 1 = 0
        if not dtype.is_floating_point:
            value = _op("min", value, _f(_largest_below(dtype)))
        return g.Cast(dtype, (), value)

    return _sample_into(self, "geometric_", (), build, {"log_q": math.log1p(-p)}, generator)


def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Each element 1 with probability p, else 0, in self's dtype (any, bool included): p a
    number in [0, 1] or a float tensor of probabilities broadcastable to self."""
    gen = generator_arg(generator, "bernoulli_")
    check_writable(self, "bernoulli_")
    if not isinstance(p, Tensor):
        fresh = factories.new_tensor((self.shape,), self.dtype, self.device)
        return _write_back(self, _bernoulli_scalar(fresh, _probability(p, "bernoulli_"), gen))
    if not p.dtype.is_floating_point:
        raise TypeError(f"bernoulli_ expects floating point probabilities, got {p.dtype}")
    shape = tuple(self.shape)
    if broadcast_shapes(tuple(p.shape), shape) != shape:
        raise ValueError(
            f"bernoulli_: probabilities of shape {list(p.shape)} do not broadcast to self's"
            f" shape {list(shape)}"
        )
    probs = p.to(device=self.device).expand(*shape)
    return _write_back(self, bernoulli(probs, generator=gen, dtype=self.dtype))


# random_()'s default top: integers fill their range; floats every integer their
# significand holds exactly (PyTorch: 2**24 for float32, 2**53 for float64).
_RANDOM_TOP = {float32: 2**24, float64: 2**53, float16: 2**11, bfloat16: 2**8}


_NOT_GIVEN = object()  # random_'s bounds not given (to=None is a bound: the dtype's top)


def random_(self: Tensor, from_=_NOT_GIVEN, to=_NOT_GIVEN, *, generator=None) -> Tensor:
    """Uniform integers: random_() over the dtype's range (floats: every integer up to
    2**digits), random_(to) in [0, to), random_(from, to) in [from, to), random_(from,
    None) from `from` to the top of that range. Any dtype but bool's two values go
    through int64."""
    top = _RANDOM_TOP.get(self.dtype)
    top = top + 1 if top is not None else self.dtype.max + 1  # one past the largest draw
    if from_ is not _NOT_GIVEN and to is _NOT_GIVEN:  # random_(to)
        from_, to = 0, from_
    low = 0 if from_ is _NOT_GIVEN else views.as_int(from_, "from")
    given = to is not _NOT_GIVEN and to is not None
    high = views.as_int(to, "to") if given else top
    if not low < high:
        raise ValueError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    _bound_check(low, "from", self.dtype)
    if given:  # torch takes `to` as an int64 and checks it against the dtype
        _bound_check(views.as_int64(high, "to") - 1, "to - 1", self.dtype)
    span = high - low
    full = span == _U64  # int64's whole range: the raw 64 bits

    def build() -> g.Node:
        bits = _block()[1] if full else _below(_scalar(int64, "span"))
        return g.Cast(self.dtype, (), _op("add", _scalar(int64, "low"), bits))

    words = {"low": low, "span": 0 if full else _signed(span)}
    return _sample_into(self, "random_", (full,), build, words, generator)


# ---- dropout ----------------------------------------------------------------------------------


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Each element zeroed with probability p and the rest scaled by 1 / (1 - p), drawn
    from the Philox stream in one kernel (PyTorch's input * mask / (1 - p)); the input
    itself when not training or p is 0."""
    x = tensor_arg(input, "dropout")
    p = float(factories.as_number(p, "p"))
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    training = bool_arg(training, "dropout", "training")
    inplace = bool_arg(inplace, "dropout", "inplace")
    if not training or p == 0.0:  # any dtype, as torch's (no mask is drawn)
        return x
    if not x.dtype.is_floating_point:
        raise TypeError(f"dropout: expected a floating point input, got {x.dtype}")
    if inplace:
        check_writable(x, "dropout")
    out = Tensor(empty_impl(x.shape, x.dtype, x.device))
    src = x.contiguous()
    dt = x.dtype

    def build() -> g.Node:
        # u < 1 - p for the uniform u = k 2**-32 of a 32-bit draw k is k < ceil((1 - p)
        # 2**32): no int -> float conversion, and a Philox block serves eight elements. The
        # unsigned k <= below runs as a signed 32-bit compare of both less 2**31.
        centered = g.Cast(int32, (), _op("add", _word(), _const(int64, -(2**31))))
        keep = _op("le", centered, _scalar(int32, "below"))
        mask = g.Where(dt, (), keep, _scalar(dt, "scale"), _const(dt, 0.0))
        return _op("mul", g.Input(dt, (), "x"), mask)

    words = _dropout_words(p, dt)
    _generate(("dropout", dt), build, out._impl, words, ins=(src._impl,), one_word=True)
    if inplace:
        eager.copy_into(x._impl, out._impl)
        x._impl.storage.bump_version()
        return x
    return out


@functools.lru_cache(maxsize=256)
def _dropout_words(p: float, dt: DType) -> dict:
    """dropout's kernel scalars for p in (0, 1] (shared: never changed): `below`, the
    signed form of the largest kept draw, and `scale`, PyTorch's mask value 1 / (1 - p)
    computed in the dtype's own arithmetic (float for float32 and the half types, rounded
    to the dtype), so x * mask keeps NaN."""
    if p == 1.0:
        scale = 0.0
    elif dt is float64:
        scale = 1.0 / (1.0 - p)
    else:
        scale = to_float32(1.0 / to_float32(1.0 - p))
        scale = to_half_precision(scale, dt) if dt.is_half else scale
    # p = 1 keeps draw 0 too, at scale 0 (the same x * 0)
    below = max(math.ceil((1.0 - p) * 2.0**32) - 1 - 2**31, -(2**31))
    return {"below": below, "scale": scale}


def _bernoulli_method(self: Tensor, p=None, *, generator=None) -> Tensor:
    """Tensor.bernoulli: kael.bernoulli(self) (self's elements are the probabilities), or
    with one probability p for every element, in self's shape and dtype."""
    return bernoulli(tensor_arg(self, "bernoulli"), p, generator=generator)


def _multinomial_method(self: Tensor, num_samples, replacement=False, *, generator=None):
    """Tensor.multinomial: kael.multinomial over self's weights."""
    return multinomial(self, num_samples, replacement, generator=generator)


_bernoulli_method.__name__ = "bernoulli"
_bernoulli_method.__qualname__ = "Tensor.bernoulli"
_multinomial_method.__name__ = "multinomial"
_multinomial_method.__qualname__ = "Tensor.multinomial"

for _name, _method in (
    ("bernoulli", _bernoulli_method),
    ("multinomial", _multinomial_method),
    ("uniform_", uniform_),
    ("normal_", normal_),
    ("exponential_", exponential_),
    ("random_", random_),
    ("cauchy_", cauchy_),
    ("log_normal_", log_normal_),
    ("geometric_", geometric_),
    ("bernoulli_", bernoulli_),
):
    setattr(Tensor, _name, tracing.op_door(_name, _method))


# ---- torch-level functions: normal, randint_like, the default generator's state -------------


def _std_checked(std: Tensor) -> None:
    """ValueError when some element of std is negative (or NaN), as PyTorch's check says."""
    tracing.data_dependent("normal's check that every std is >= 0")
    if not bool((std >= 0).all().item()):
        raise ValueError("normal expects all elements of std >= 0.0")


def _normal_out(out, shape: tuple, dtype, device, what: str = "normal") -> Tensor:
    """normal's out= checked: a writable Tensor of the result's shape on the operands' device,
    of a floating dtype (the draws are made in out's dtype, as PyTorch's are); `dtype`, when
    given, must be out's."""
    out = tensor_arg(out, what, "out")
    if dtype is not None and as_dtype(dtype) is not out.dtype:
        raise TypeError(
            f"{what}: dtype {as_dtype(dtype)} does not match dtype of out parameter ({out.dtype})"
        )
    _floating(what, out.dtype)
    return output(out, shape, out.dtype, out.device if device is None else device, what)


def _normal_floats(mean, std, size, gen, out, dtype, device) -> Tensor:
    """normal(mean: float, std: float, size): Tensor.normal_ of a new tensor or of out."""
    if size is None:
        raise TypeError(
            "normal() received an invalid combination of arguments: normal(mean: float,"
            " std: float) needs a size"
        )
    if not isinstance(size, tuple | list | Size):
        raise TypeError(
            f"normal(mean: float, std: float, size): size must be a tuple of ints, got"
            f" {type(size).__name__}"
        )
    mean_f, std_f = _float_arg(mean, "mean"), _float_arg(std, "std")
    if not std_f >= 0:
        raise ValueError(f"normal expects std >= 0.0, but found std {std_f}")
    if out is None:
        out = factories.new_tensor((size,), _floating("normal", dtype), device)
    else:
        shape = views.check_shape(views.parse_size((size,)))
        out = _normal_out(out, shape, dtype, None if device is None else parse_device(device))
    return normal_(out, mean_f, std_f, generator=gen)


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None):
    """torch.normal's four forms: normal(mean: Tensor, std: Tensor) (broadcast, mean's dtype),
    normal(mean: Tensor, std: float = 1), normal(mean: float, std: Tensor) (std's dtype), and
    normal(mean: float, std: float, size) (the default dtype unless told otherwise). The
    tensor forms draw a standard normal z in the result's dtype (out's, when given) and
    compute z * std + mean in place, as PyTorch does; the last form is Tensor.normal_."""
    gen = generator_arg(generator, "normal")
    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mean_t and not std_t:
        return _normal_floats(mean, std, size, gen, out, dtype, device)
    if size is not None or dtype is not None:
        raise TypeError("normal() takes size and dtype only with a float mean and a float std")
    if mean_t and std_t:
        shape = broadcast_shapes(tuple(mean.shape), tuple(std.shape))
        _std_checked(std)
        out_dtype, where = mean.dtype, device_of([mean, std], "normal")
    elif mean_t:
        std_f = _float_arg(std, "std")
        if not std_f >= 0:
            raise ValueError(f"normal expects std >= 0.0, but found std {std_f}")
        shape, out_dtype, where = tuple(mean.shape), mean.dtype, mean.device
    else:
        _float_arg(mean, "mean")
        _std_checked(std)
        shape, out_dtype, where = tuple(std.shape), std.dtype, std.device
    if out is not None:
        # PyTorch draws into out first, so an out that aliases mean or std is read after
        out = normal_(_normal_out(out, shape, None, where), generator=gen)
        return out.mul_(std).add_(mean)
    if not out_dtype.is_floating_point:
        raise TypeError(f"normal expects a floating point mean or std, got {out_dtype}")
    out = _fill("randn", factories.new_tensor((shape,), out_dtype, where), gen)
    return out.mul_(std).add_(mean)


def _bound_check(value: int, what: str, dtype: DType) -> None:
    """PyTorch's random_(from, to) range check of randint_like: from and to - 1 must be
    values of the dtype. A float's beyond the integers its significand holds exactly
    (up to its largest finite value) only warns that draws will round, as PyTorch's."""
    if dtype.is_complex:
        raise TypeError(
            "random bounds are checked only for integral, floating-point and boolean types,"
            f" not {dtype}"
        )
    if dtype.is_bool:
        low, high = 0, 1
    elif dtype.is_floating_point:
        low, high = -finfo(dtype).max, finfo(dtype).max
        if abs(value) > _RANDOM_TOP[dtype] and low <= value <= high:
            user_warning.warn(
                f"{what} is out of bounds [{-_RANDOM_TOP[dtype]}, {_RANDOM_TOP[dtype]}] for"
                f" {dtype}: {what} = {value}; the drawn values will be rounded",
                UserWarning,
            )
    else:
        low, high = dtype.min, dtype.max
    if not low <= value <= high:
        raise ValueError(f"{what} is out of bounds for {dtype}: {what} = {value}")


def _type_names(bounds: tuple, keywords: dict) -> str:
    """The arguments of a call as PyTorch's parser lists them: (Tensor, int, low=int)."""
    parts = ["Tensor", *(type(b).__name__ for b in bounds)]
    parts += [f"{k}={type(v).__name__}" for k, v in keywords.items()]
    return ", ".join(parts)


_UNSET = object()  # a bound not passed, told from an explicit None (which torch refuses)
INT64_TOP = 2**63


def _invalid_bounds(bounds: tuple, keywords: dict) -> TypeError:
    """torch's parser error for randint_like arguments that fit none of its overloads."""
    return TypeError(
        "randint_like() received an invalid combination of arguments - got"
        f" ({_type_names(bounds, keywords)}), but expected one of: (Tensor input, int high),"
        " (Tensor input, Tensor high), (Tensor input, int low, int high)"
    )


def _like_bounds(bounds: tuple, low, high) -> tuple[int, int]:
    """(low, high) of randint_like's three forms: (input, high) with an int or a 0-d tensor
    high, high= alone the same; (input, low, high) with int bounds, either by keyword."""
    keywords = {k: v for k, v in (("low", low), ("high", high)) if v is not _UNSET}
    args = (*bounds, *keywords.values())
    if len(args) == 1 and "low" not in keywords:
        one = args[0]
        value = _tensor_high(one) if isinstance(one, Tensor) else _int_bound(one)
    elif len(args) == 2 and ("low" not in keywords or "high" in keywords):
        low, high = (_int_bound(b) for b in args)
        value = None if low is None or high is None else (low, high)
    else:
        value = None
    if value is None:
        raise _invalid_bounds(bounds, keywords)
    return value if isinstance(value, tuple) else (0, value)


def _int_bound(value) -> int | None:
    """An int overload's bound as torch's parser takes it (a Python or NumPy integer, or an
    integer tensor of one element), None for anything else (a float, bool, None)."""
    if isinstance(value, Tensor):
        kind = value.dtype
        if kind.is_floating_point or kind.is_bool or value.numel() != 1:
            return None
        tracing.data_dependent("randint_like's tensor bound")
        return int(value.reshape(()).item())
    return views.index_or_none(value)


def _tensor_high(value: Tensor) -> int:
    """The Tensor high overload's bound: a 0-d CPU tensor of any dtype, its value truncated
    to int64 as torch's item<int64_t>() does (2.5 -> 2, True -> 1; 2**63 wraps to -2**63)."""
    if value.ndim != 0 or value.device is not CPU:
        raise ValueError(
            "high must be a scalar tensor and on CPU, got shape"
            f" {format_shape(value.shape)} on {value.device}"
        )
    tracing.data_dependent("randint_like's tensor high")
    number = value.item()
    if isinstance(number, float):
        if not -INT64_TOP <= number <= INT64_TOP:  # NaN too
            raise ValueError(
                f"value cannot be converted to type int64_t without overflow: high = {number}"
            )
        number = math.trunc(number)
    return (int(number) + INT64_TOP) % (2 * INT64_TOP) - INT64_TOP


def randint_like(
    input,
    *bounds,
    low=_UNSET,
    high=_UNSET,
    generator=None,
    dtype=None,
    device=None,
    memory_format=None,
) -> Tensor:
    """Uniform integers in [low, high) in input's shape (and dtype and device unless told
    otherwise): randint_like(input, high) or randint_like(input, low, high), as torch
    overloads it (one positional bound is high; keyword low needs a high too); a lone high
    may be a 0-d tensor of any dtype (truncated), low and high integers or integer tensors."""
    input = tensor_arg(input, "randint_like")
    low, high = _like_bounds(bounds, low, high)
    if low >= high:
        raise ValueError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    target = factories.new_like(input, dtype, device, "randint_like", memory_format)
    _bound_check(low, "from", target.dtype)
    _bound_check(high - 1, "to - 1", target.dtype)
    drawn = randint(low, high, tuple(target.shape), generator=generator, device=target.device)
    if target.dtype is int64 and target.stride() == drawn.stride():
        return drawn
    eager.copy_into(target._impl, drawn._impl)  # converted into target's dtype and layout
    return target


def get_rng_state() -> Tensor:
    """The default generator's state as a uint8 tensor (set_rng_state takes it back)."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default generator to a state get_rng_state returned."""
    if not isinstance(new_state, Tensor) or new_state.dtype is not uint8:
        got = new_state.dtype if isinstance(new_state, Tensor) else type(new_state).__name__
        raise TypeError(f"RNG state must be a uint8 tensor (torch.ByteTensor), got {got}")
    default_generator.set_state(new_state)


def seed() -> int:
    """Reseed the default generator from the operating system's entropy; the new seed."""
    return default_generator.seed()
