"""Philox4x32-10 in LLVM: Random123's known answers, the IR ops against a reference, PTX."""

from __future__ import annotations

import ctypes
import random
import shutil

import numpy as np
import pytest
from kernel_helpers import empty_like_np, impl_of
from llvmlite import ir
from philox_reference import MASK32, MASK64, reference, word_of

import kael
from kael.codegen import philox
from kael.codegen.cpu import compiler, sampling
from kael.codegen.lowering import ExprEmitter
from kael.codegen.ptx import compiler as ptx_compiler
from kael.frontend import eager
from kael.frontend import random as kr
from kael.ir import expr as x
from kael.ir import graph as g
from kael.ir.kernel import CONTIG, STRIDED
from kael.runtime.dtypes import int64

# Random123's tests/kat_vectors, the three "philox4x32 10" lines: counter words, key
# words, expected output words (published constants, not kael output).
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    (
        (0xFFFFFFFF,) * 4,
        (0xFFFFFFFF,) * 2,
        (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD),
    ),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


def reference_halves(counter: int, key: int) -> tuple[int, int]:
    """The `philox` and `philox_hi` values (unsigned) of a 64-bit counter and key."""
    x = reference([counter & MASK32, counter >> 32, 0, 0], [key & MASK32, key >> 32])
    return x[0] | x[1] << 32, x[2] | x[3] << 32


def test_reference_reproduces_the_known_answers():
    for counter, key, want in KAT:
        assert reference(counter, key) == list(want)


def _compile(build, name: str):
    """Compile a hand-built llvmlite function for the host and return its address."""
    module = ir.Module(name=name)
    build(module)
    text = "\n".join(ln for ln in str(module).splitlines() if not ln.startswith("target "))
    addresses, tracker = compiler.load_object_symbols(compiler.compile_ir_text(text), (name,), name)
    _keep.append(tracker)
    return addresses[name]


_keep: list = []


def _kat_function(width: int, loose: bool = False):
    """void kat(i32* counter, i32* key, i32* out): word-major arrays of `width` lanes;
    `loose` runs the rounds on i64 lanes whose high halves hold garbage."""
    name = f"philox_kat_{width}_{int(loose)}"
    i32p = ir.IntType(32).as_pointer()

    def build(module):
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i32p] * 3), name)
        b = ir.IRBuilder(fn.append_basic_block())
        lanes = ir.IntType(32) if width == 1 else ir.VectorType(ir.IntType(32), width)

        def word(ptr, i):
            p = b.gep(ptr, [ir.Constant(ir.IntType(64), i * width)])
            return b.load(b.bitcast(p, lanes.as_pointer()), align=4)

        def widen(value):
            wide = ir.VectorType(ir.IntType(64), width)
            garbage = ir.Constant(wide, [(0xDEADBEEF + 77 * t) << 32 for t in range(width)])
            return b.or_(b.zext(value, wide), garbage) if loose else value

        counter = tuple(widen(word(fn.args[0], i)) for i in range(4))
        key = tuple(widen(word(fn.args[1], i)) for i in range(2))
        for i, value in enumerate(philox.philox4x32(b, width, counter, key)):
            value = b.trunc(value, lanes) if loose else value
            p = b.gep(fn.args[2], [ir.Constant(ir.IntType(64), i * width)])
            b.store(value, b.bitcast(p, lanes.as_pointer()), align=4)
        b.ret_void()

    address = _compile(build, name)
    return ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(address)


@pytest.mark.parametrize(
    "width, loose", [(1, False), (4, False), (16, False), (4, True), (16, True)]
)
def test_emitted_philox_matches_the_known_answers_in_every_lane(width, loose):
    fn = _kat_function(width, loose)
    cases = [KAT[i % len(KAT)] for i in range(width)]
    counter = np.array([[c[0][w] for c in cases] for w in range(4)], np.uint32)
    key = np.array([[c[1][w] for c in cases] for w in range(2)], np.uint32)
    out = np.zeros((4, width), np.uint32)
    fn(counter.ctypes.data, key.ctypes.data, out.ctypes.data)
    for lane, (_, _, want) in enumerate(cases):
        assert [int(v) for v in out[:, lane]] == list(want)


def _bits_kernel(op: str):
    """The template out = op(in0 + index, in1) over int64, or op(in0, in1) for mulhi_u."""

    def build():
        a, key = g.Input(int64, (), "a"), g.Input(int64, (), "b")
        if op != "mulhi_u":
            a = g.Binary(int64, (), "add", a, g.Position(int64, (), 0))
        return f"test_{op}", [g.Binary(int64, (), op, a, key)]

    return eager.template(("test_philox", op), build)


def _run(op: str, a: np.ndarray, b: np.ndarray, out_strided: bool = False) -> np.ndarray:
    n = a.shape[0]
    store, _ = empty_like_np((n, 2) if out_strided else (n,), np.int64)
    out = store[:, 0] if out_strided else store
    eager.run(_bits_kernel(op), [impl_of(out)], [impl_of(a), impl_of(b)])
    return np.ascontiguousarray(out).view(np.uint64)


@pytest.mark.parametrize("op", ["philox", "philox_hi"])
@pytest.mark.parametrize("strided", [False, True], ids=["vector", "scalar"])
def test_ops_give_the_halves_of_the_block_at_counter_plus_index(op, strided):
    # Counters cross 2**32 (the second counter word) and keys use both key words.
    n = 77  # vector body, unrolled body and scalar tail
    rng = random.Random(5)
    for start, key in [(0, 0), (2**32 - 40, 0x0123456789ABCDEF), (2**64 - 30, MASK64)]:
        key = key or rng.getrandbits(64)
        a = np.full(n, start, np.uint64).view(np.int64)
        b = np.full(n, key, np.uint64).view(np.int64)
        got = _run(op, a, b, strided)
        half = 0 if op == "philox" else 1
        want = [reference_halves((start + i) & MASK64, key)[half] for i in range(n)]
        assert [int(v) for v in got] == want


@pytest.mark.parametrize("strided", [False, True], ids=["vector", "scalar"])
@pytest.mark.parametrize("start", [0, 5, 64, 2**34 - 40, 2**64 - 300], ids=str)
def test_philox32_is_the_draw_of_its_counter_in_the_group_layout(start, strided):
    """Aligned starts take the grouped vector path, odd ones (and strided outputs) each
    lane's own block; groups change inside the run and counters wrap past 2**64."""
    n, key = 301, 0x0123456789ABCDEF
    a = np.full(n, start, np.uint64).view(np.int64)
    b = np.full(n, key, np.uint64).view(np.int64)
    got = _run("philox32", a, b, strided)
    want = [word_of((start + i) & MASK64, key) for i in range(n)]
    assert [int(v) for v in got] == want


def test_philox32_keys_may_change_inside_a_group():
    """Vectors of one group of counters under different keys: the cached group is not
    handed to the second key."""
    n = 256
    a = np.zeros(n, np.int64)
    keys = (np.arange(n, dtype=np.int64) // 16) * 977 + 1  # one key per 16 counters
    got = _run("philox32", a, keys)
    assert [int(v) for v in got] == [word_of(i, int(k)) for i, k in enumerate(keys)]


def test_philox32_keys_may_differ_by_lane():
    n = 64
    a = np.zeros(n, np.int64)
    keys = np.arange(n, dtype=np.int64) * 977
    got = _run("philox32", a, keys)
    want = [word_of(i, int(k)) for i, k in enumerate(keys)]
    assert [int(v) for v in got] == want


def test_mulhi_u_is_the_high_word_of_the_unsigned_product():
    rng = random.Random(7)
    edges = [0, 1, 2**32 - 1, 2**32, 2**63 - 1, 2**63, MASK64]
    pairs = [(x, y) for x in edges for y in edges]
    pairs += [(rng.getrandbits(64), rng.getrandbits(64)) for _ in range(200)]
    a = np.array([x for x, _ in pairs], np.uint64).view(np.int64)
    b = np.array([y for _, y in pairs], np.uint64).view(np.int64)
    got = _run("mulhi_u", a, b)
    assert [int(v) for v in got] == [(x * y) >> 64 for x, y in pairs]


def test_both_halves_share_one_block_in_the_emitted_code():
    # randn and randint read both halves of one block: the ten rounds are emitted once.
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.IntType(64), [ir.IntType(64)] * 2), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    emitter = ExprEmitter(b, 1, None, None, lambda slot: fn.args[slot])
    counter, key = x.Param(int64, 0), x.Param(int64, 1)
    lo, hi = (emitter.emit(x.binary(op, counter, key)) for op in ("philox", "philox_hi"))
    b.ret(b.xor(lo, hi))
    # Two 32x32->64 high products per round, with or without the second half.
    assert str(fn).count("mul i64") == 2 * philox.ROUNDS


def test_multinomial_sampler_is_one_compiled_function():
    assert f'define void @"{sampling.SYMBOL}"' in sampling.ir_text()
    assert ctypes.cast(sampling.function(), ctypes.c_void_p).value


def _random_templates():
    """Every kernel template kael.frontend.random builds, keyed by its signature."""
    probs = kael.full((3,), 0.5)
    for dtype in (kael.float32, kael.float64):
        kr.rand(3, dtype=dtype)
        kr.randn(3, dtype=dtype)
        kr.bernoulli(probs.to(dtype))
        kr.unit_from_bits(kael.tensor([1, 2]), dtype)
    kr.randint(0, 5, (3,))
    kr.randint(0, 5, (3,), dtype=kael.float32)
    kr.bernoulli((3,), 0.5, dtype=kael.bool)
    kr.randperm(3)
    return {k: v for k, v in eager._templates.items() if k[0] == "random"}


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on PATH")
def test_every_random_kernel_is_ptx_that_ptxas_accepts():
    templates = _random_templates()
    assert len(templates) >= 12
    for key, (kernel, _) in templates.items():
        for inner in (CONTIG, STRIDED):
            specialized = kernel.specialize(1, (inner,) * (1 + len(kernel.inputs)), False, False)
            ptx = ptx_compiler.compile_ptx(specialized)
            assert ".entry" in ptx, key
            ptx_compiler.ptxas_check(ptx)


def test_philox_rounds_use_32_bit_multiplies_on_the_gpu():
    _random_templates()
    kernel, _ = eager._templates[("random", "rand", kael.float32)]
    ptx = ptx_compiler.compile_ptx(kernel.specialize(1, (CONTIG,), False, False))
    assert ptx.count("mul.hi.u32") >= philox.ROUNDS
