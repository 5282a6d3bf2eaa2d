"""The emulated device runs hand-written PTX (checked by ptxas where it is installed) as a
GPU would: wrapping integers, saturating conversions, warp shuffles, barriers that wait,
atomics that serialize, and a typed fault for every access a GPU would refuse."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from emulated_kernels import fault_text, kernel, launch

from kael.runtime.emulator import driver, machine
from kael.runtime.emulator.fma import fma

INT_OPS = {  # PTX body computing out[8i + k] from a = in[2i], b = in[2i + 1]
    "mul.hi.u64": lambda a, b: (a * b) >> 64,
    "mul.hi.s64": lambda a, b: (_signed(a) * _signed(b)) >> 64,
    "shl.b64": lambda a, b: (a << (b & 127)) if (b & 127) < 64 else 0,
    "shr.s64": lambda a, b: _signed(a) >> min(b & 127, 63),
    "shr.u64": lambda a, b: a >> (b & 127) if (b & 127) < 64 else 0,
    "div.s64": lambda a, b: _trunc_div(_signed(a), _signed(b)),
    "rem.s64": lambda a, b: _signed(a) - _trunc_div(_signed(a), _signed(b)) * _signed(b),
    "min.s64": lambda a, b: min(_signed(a), _signed(b)),
}


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def test_integer_arithmetic_wraps_and_shifts_saturate():
    body = "\tmul.wide.u32 %rd3, %r4, 16;\n\tadd.s64 %rd4, %rd2, %rd3;\n"
    body += "\tld.global.u64 %rd5, [%rd4];\n\tld.global.u64 %rd6, [%rd4+8];\n"
    body += "\tcvt.u32.u64 %r5, %rd6;\n\tand.b32 %r5, %r5, 127;\n"
    body += "\tmul.wide.u32 %rd7, %r4, 64;\n\tadd.s64 %rd8, %rd1, %rd7;\n"
    for k, op in enumerate(INT_OPS):
        b = "%r5" if op.startswith("sh") else "%rd6"
        body += f"\t{op} %rd{10 + k}, %rd5, {b};\n\tst.global.u64 [%rd8+{8 * k}], %rd{10 + k};\n"
    rng = np.random.default_rng(0)
    pairs = rng.integers(-(1 << 63), (1 << 63) - 1, (256, 2), dtype=np.int64, endpoint=True)
    pairs[:8, 1] = [1, -1, 63, 64, 65, 127, 2, 3]
    pairs[0, 0] = -(1 << 63)  # INT64_MIN / 1 and min shifts
    pairs[:, 1] = np.where(pairs[:, 1] == 0, 7, pairs[:, 1])
    err, got = launch(kernel(body), np.zeros((256, 8), np.uint64), pairs.view(np.uint64), 2, 128)
    assert err == driver.OK, fault_text(err)
    for i, (a, b) in enumerate(pairs.view(np.uint64).tolist()):
        want = [fn(a, b) % (1 << 64) for fn in INT_OPS.values()]
        assert got[i].tolist() == want, (i, a, b)


def test_packed_min_and_max_take_each_16_bit_half_as_its_type():
    # LLVM vectorizes a max over int16 keys into max.u16x2 (topk's heap kernel)
    body = (
        "\tmul.wide.u32 %rd3, %r4, 8;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tadd.s64 %rd5, %rd1, %rd3;\n"
    )
    body += "\tld.global.u32 %r6, [%rd4];\n\tld.global.u32 %r7, [%rd4+4];\n"
    body += "\tmax.u16x2 %r8, %r6, %r7;\n\tmin.s16x2 %r9, %r6, %r7;\n"
    body += "\tst.global.u32 [%rd5], %r8;\n\tst.global.u32 [%rd5+4], %r9;\n"
    halves = np.array([[1, -1, 7, 7], [-32768, 32767, 0, -1], [5, 3, -5, -3]], np.int16)
    pairs = halves.view(np.uint32)  # each row: a = halves 0 and 1, b = halves 2 and 3
    err, got = launch(kernel(body), np.zeros((3, 2), np.uint32), pairs, 1, 3)
    assert err == driver.OK, fault_text(err)
    a, b = halves[:, :2], halves[:, 2:]
    want_max = np.maximum(a.view(np.uint16), b.view(np.uint16))
    want_min = np.minimum(a, b)
    assert got[:, 0:1].view(np.uint16).tolist() == want_max.tolist()
    assert got[:, 1:2].view(np.int16).tolist() == want_min.tolist()


def test_float_to_int_conversion_saturates_and_sends_nan_to_zero():
    body = (
        "\tmul.wide.u32 %rd3, %r4, 8;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tadd.s64 %rd5, %rd1, %rd3;\n"
    )
    body += "\tld.global.f64 %rd6, [%rd4];\n\tcvt.rzi.s32.f64 %r6, %rd6;\n"
    body += "\tcvt.s64.s32 %rd7, %r6;\n\tst.global.u64 [%rd5], %rd7;\n"
    values = np.array([1.9, -1.9, 3e9, -3e9, np.nan, np.inf, -np.inf, 2147483647.5], np.float64)
    err, got = launch(kernel(body.replace("%rd6", "%rd6")), np.zeros(8, np.int64), values, 1, 8)
    assert err == driver.OK, fault_text(err)
    assert got.tolist() == [1, -1, 2**31 - 1, -(2**31), 0, 2**31 - 1, -(2**31), 2**31 - 1]


def test_warp_shuffles_sum_a_warp_in_butterfly_order():
    body = (
        "\tmul.wide.u32 %rd3, %r4, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tadd.s64 %rd5, %rd1, %rd3;\n"
    )
    body += "\tld.global.u32 %r6, [%rd4];\n"
    for k, step in enumerate((16, 8, 4, 2, 1)):
        a, d = 6 + 2 * k, 7 + 2 * k
        body += f"\tshfl.sync.bfly.b32 %r{d}, %r{a}, {step}, 31, -1;\n\tadd.s32 %r{a + 2}, %r{a}, %r{d};\n"
    body += "\tst.global.u32 [%rd5], %r16;\n"
    values = np.arange(64, dtype=np.uint32) ** 2
    err, got = launch(kernel(body), np.zeros(64, np.uint32), values, 1, 64)
    assert err == driver.OK, fault_text(err)
    assert got.tolist() == [int(values[:32].sum())] * 32 + [int(values[32:].sum())] * 32


BARRIER_AFTER_LOOP = """
	.shared .align 8 .b8 slots[1024];
"""


def slot(index: str) -> str:
    """PTX putting the address of shared `slots[index]` (u32 words) in %rd11."""
    return f"\tmov.u64 %rd9, slots;\n\tmul.wide.u32 %rd10, {index}, 4;\n\tadd.s64 %rd11, %rd9, %rd10;\n"


def store_out(value: str) -> str:
    """PTX storing `value` to out[thread]."""
    return f"\tmul.wide.u32 %rd3, %r4, 4;\n\tadd.s64 %rd5, %rd1, %rd3;\n\tst.global.u32 [%rd5], {value};\n"


def test_a_barrier_waits_for_threads_whose_code_comes_after_it():
    # thread t loops t times in a block laid out after the barrier, then meets the others
    body = (
        """	mov.u32 %r10, 0;
	bra.uni $L_check;
$L_meet:
	bar.sync 0;
	xor.b32 %r12, %r1, 1;
"""
        + slot("%r12")
        + "\tld.shared.u32 %r13, [%rd11];\n"
        + store_out("%r13")
        + """	ret;
$L_check:
	setp.ge.u32 %p1, %r10, %r1;
	@%p1 bra $L_store;
	add.s32 %r10, %r10, 1;
	bra.uni $L_check;
$L_store:
"""
        + slot("%r1")
        + """	st.shared.u32 [%rd11], %r10;
	bra.uni $L_meet;
"""
    )
    err, got = launch(
        kernel(body, BARRIER_AFTER_LOOP), np.zeros(64, np.uint32), np.zeros(1, np.uint32), 2, 32
    )
    assert err == driver.OK, fault_text(err)
    assert got.tolist() == [t ^ 1 for t in range(32)] * 2  # each read its neighbour's count


def test_two_parts_of_a_cta_waiting_at_different_barriers_is_a_launch_failure():
    body = """	setp.eq.u32 %p1, %r1, 0;
	@%p1 bra $L_other;
	bar.sync 0;
	ret;
$L_other:
	bar.sync 0;
"""
    err, _ = launch(kernel(body), np.zeros(1, np.uint32), np.zeros(1, np.uint32), 1, 64)
    assert err == driver.CUresult.CUDA_ERROR_LAUNCH_FAILED
    assert "never reaches" in fault_text(err) and "bar.sync" in fault_text(err)


def test_threads_that_exited_release_a_barrier():
    # PTX ISA, exit: barriers exclusively waiting on threads that have exited are resolved
    body = """	setp.ge.u32 %p1, %r1, 32;
	@%p1 bra $L_done;
	bar.sync 0;
	mul.wide.u32 %rd3, %r4, 4;
	add.s64 %rd5, %rd1, %rd3;
	st.global.u32 [%rd5], %r1;
$L_done:
"""
    err, got = launch(kernel(body), np.zeros(64, np.uint32), np.zeros(1, np.uint32), 1, 64)
    assert err == driver.OK, fault_text(err)
    assert got[:32].tolist() == list(range(32)) and not got[32:].any()


def test_a_load_past_an_allocation_is_an_illegal_address_naming_the_instruction():
    body = "\tmul.wide.u32 %rd3, %r4, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tld.global.u32 %r6, [%rd4+4096];\n"
    err, _ = launch(kernel(body), np.zeros(4, np.uint32), np.zeros(4, np.uint32), 1, 4)
    assert err == driver.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS
    assert "ld.global.u32 %r6, [%rd4+4096]" in fault_text(err)


def test_a_load_inside_its_allocation_is_not_a_fault():
    body = "\tmul.wide.u32 %rd3, %r4, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tld.global.u32 %r6, [%rd4+252];\n"
    err, _ = launch(kernel(body), np.zeros(4, np.uint32), np.zeros(64, np.uint32), 1, 1)
    assert err == driver.OK, fault_text(err)


@pytest.mark.parametrize(
    "body",
    [
        "\tst.global.u32 [%rd1+2], %r4;\n",  # off its element's alignment
        "\tld.global.v2.u32 {%r6, %r7}, [%rd2+4];\n",  # aligned to an element, not the vector
    ],
    ids=["store", "vector-load"],
)
def test_a_misaligned_access_faults(body):
    err, _ = launch(kernel(body), np.zeros(4, np.uint32), np.zeros(8, np.uint32), 1, 1)
    assert err == driver.CUresult.CUDA_ERROR_MISALIGNED_ADDRESS


def test_atomics_on_one_address_serialize():
    body = "\tatom.global.add.u32 %r6, [%rd1], 1;\n\tmul.wide.u32 %rd3, %r4, 4;\n"
    body += "\tadd.s64 %rd5, %rd1, %rd3;\n\tst.global.u32 [%rd5+4], %r6;\n"
    err, got = launch(kernel(body), np.zeros(129, np.uint32), np.zeros(1, np.uint32), 2, 64)
    assert err == driver.OK, fault_text(err)
    assert got[0] == 128 and sorted(got[1:].tolist()) == list(range(128))


# -- dynamic shared memory: `.extern .shared` arrays sized by the launch --------------------
DYNAMIC = ".extern .shared .align 16 .b8 dyn[];\n"
FIXED = "\t.shared .align 16 .b8 fixed[48];\n"


def _dynamic_kernel(at: int = 0, static: bool = False) -> str:
    """Thread t stores t at dyn[at + 4 t], and after a barrier gives out[t] the word of
    thread (t + 1) % block, and out[block + t] dyn's address (the static array's first)."""
    body = "\tmov.u64 %rd9, dyn;\n\tmul.wide.u32 %rd10, %r1, 4;\n\tadd.s64 %rd11, %rd9, %rd10;\n"
    body += f"\tst.shared.u32 [%rd11+{at}], %r1;\n\tbar.sync 0;\n"
    body += "\tadd.s32 %r6, %r1, 1;\n\trem.u32 %r6, %r6, %r3;\n\tmul.wide.u32 %rd12, %r6, 4;\n"
    body += f"\tadd.s64 %rd13, %rd9, %rd12;\n\tld.shared.u32 %r7, [%rd13+{at}];\n"
    body += store_out("%r7")
    if static:
        body += "\tmov.u64 %rd14, fixed;\n\tst.shared.u32 [%rd14], %r1;\n"
    body += "\tcvt.u32.u64 %r8, %rd9;\n\tadd.s32 %r9, %r4, %r3;\n\tmul.wide.u32 %rd3, %r9, 4;\n"
    body += "\tadd.s64 %rd5, %rd1, %rd3;\n\tst.global.u32 [%rd5], %r8;\n"
    text = kernel(body, FIXED if static else "")
    return text.replace(".visible .entry", DYNAMIC + ".visible .entry", 1)


@pytest.mark.parametrize("static", [False, True], ids=["dynamic-only", "after-static"])
def test_extern_shared_arrays_hold_the_launchs_dynamic_bytes(static):
    err, got = launch(
        _dynamic_kernel(static=static), np.zeros(64, np.uint32), np.zeros(1, np.uint32), 1, 32,
        shared=128,
    )  # fmt: skip
    assert err == driver.OK, fault_text(err)
    assert got[:32].tolist() == [(t + 1) % 32 for t in range(32)]
    assert set(got[32:].tolist()) == {48 if static else 0}  # past the static variables


def test_an_access_past_the_dynamic_bytes_faults():
    err, _ = launch(
        _dynamic_kernel(), np.zeros(64, np.uint32), np.zeros(1, np.uint32), 1, 32, shared=124
    )
    assert err == driver.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS
    assert "st.shared.u32" in fault_text(err) and "past 124 bytes" in fault_text(err)


def test_more_than_48_kb_needs_the_functions_attribute_raised():
    at, nbytes = 100 * 1024, 100 * 1024 + 128  # the words at the far end of the window
    args = (_dynamic_kernel(at), np.zeros(64, np.uint32), np.zeros(1, np.uint32), 1, 32)
    err, _ = launch(*args, shared=nbytes)
    assert err == driver.CUresult.CUDA_ERROR_INVALID_VALUE
    assert "allowed" in fault_text(err)
    err, got = launch(*args, shared=nbytes, allow=nbytes)
    assert err == driver.OK, fault_text(err)
    assert got[:32].tolist() == [(t + 1) % 32 for t in range(32)]
    err, _ = launch(*args, shared=nbytes + 16, allow=nbytes)  # more than allowed
    assert err == driver.CUresult.CUDA_ERROR_INVALID_VALUE


def test_the_attribute_is_bounded_by_the_devices_227_kb():
    _, module = driver.cuModuleLoadData(_dynamic_kernel(static=True).encode())
    _, fn = driver.cuModuleGetFunction(module, b"k")
    attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    assert driver.cuFuncSetAttribute(fn, attribute, 227 * 1024 - 48) == (driver.OK,)
    (err,) = driver.cuFuncSetAttribute(fn, attribute, 227 * 1024 - 47)  # with the static 48
    assert err == driver.CUresult.CUDA_ERROR_INVALID_VALUE
    assert "227" in fault_text(err) or str(227 * 1024) in fault_text(err)


def test_a_kernel_that_never_ends_times_out(monkeypatch):
    monkeypatch.setattr(machine, "MAX_STEPS", 1000)
    body = "$L_spin:\n\tbra.uni $L_spin;\n"
    err, _ = launch(kernel(body), np.zeros(1, np.uint32), np.zeros(1, np.uint32), 1, 32)
    assert err == driver.CUresult.CUDA_ERROR_LAUNCH_TIMEOUT


def _exact(x, y, z) -> float:
    return float(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_rounds_once(dtype):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(4000).astype(dtype)
    b = rng.standard_normal(4000).astype(dtype)
    c = (-(a.astype(np.float64) * b) * (1 + 1e-7 * rng.standard_normal(4000))).astype(dtype)
    c[::5] = rng.standard_normal(800).astype(dtype)  # and sums without cancellation
    got = fma(a, b, c)
    want = np.array([_exact(x, y, z) for x, y, z in zip(a, b, c)]).astype(dtype)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == dtype


def test_fma_float64_near_overflow_and_underflow_is_exact():
    a = np.array([1e300, 1e-300, 3.0, 1e308])
    b = np.array([1e10, 1e-30, 2.0**-1074, 2.0])
    c = np.array([-1e300, 5e-324, 0.0, -1.5e308])
    got = fma(a, b, c)
    want = [float("inf"), _exact(1e-300, 1e-30, 5e-324), _exact(3.0, 2.0**-1074, 0.0)]
    want.append(_exact(1e308, 2.0, -1.5e308))  # a * b overflows, the exact sum does not
    np.testing.assert_array_equal(got, want)


def test_alloca_gives_each_thread_its_own_stack_until_stackrestore():
    # each thread allocas t + 1 words, fills them with t, sums them back, restores the stack
    body = """	stacksave.u64 %rd20;
	add.s32 %r5, %r1, 1;
	mul.wide.u32 %rd21, %r5, 8;
	alloca.u64 %rd22, %rd21, 8;
	cvta.local.u64 %rd23, %rd22;
	cvt.u64.u32 %rd24, %r1;
	mov.u32 %r6, 0;
$L_fill:
	mul.wide.u32 %rd25, %r6, 8;
	add.s64 %rd26, %rd23, %rd25;
	st.u64 [%rd26], %rd24;
	add.s32 %r6, %r6, 1;
	setp.lt.u32 %p1, %r6, %r5;
	@%p1 bra $L_fill;
	mov.u64 %rd27, 0;
	mov.u32 %r6, 0;
$L_sum:
	mul.wide.u32 %rd25, %r6, 8;
	add.s64 %rd26, %rd23, %rd25;
	ld.u64 %rd28, [%rd26];
	add.s64 %rd27, %rd27, %rd28;
	add.s32 %r6, %r6, 1;
	setp.lt.u32 %p1, %r6, %r5;
	@%p1 bra $L_sum;
	stackrestore.u64 %rd20;
	stacksave.u64 %rd29;
	sub.s64 %rd30, %rd29, %rd20;
	mul.wide.u32 %rd3, %r4, 16;
	add.s64 %rd5, %rd1, %rd3;
	st.global.u64 [%rd5], %rd27;
	st.global.u64 [%rd5+8], %rd30;
"""
    err, got = launch(kernel(body), np.zeros((40, 2), np.uint64), np.zeros(1, np.uint64), 1, 40)
    assert err == driver.OK, fault_text(err)
    assert got[:, 0].tolist() == [t * (t + 1) for t in range(40)]
    assert got[:, 1].tolist() == [0] * 40  # the stack is back where it was saved


def test_an_alloca_past_the_stack_is_an_illegal_address():
    body = "\tmov.u64 %rd20, 1048576;\n\talloca.u64 %rd22, %rd20, 8;\n"
    err, _ = launch(kernel(body), np.zeros(1, np.uint64), np.zeros(1, np.uint64), 1, 1)
    assert err == driver.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS and "alloca" in fault_text(err)


def test_prmt_picks_bytes_and_spreads_their_signs():
    body = "\tmov.u32 %r6, 0x84838281;\n\tmov.u32 %r7, 0x08070605;\n"
    body += "\tprmt.b32 %r8, %r6, %r7, 0x7340;\n\tprmt.b32 %r9, %r6, %r7, 0x0b0a;\n"
    body += "\tst.global.u32 [%rd1], %r8;\n\tst.global.u32 [%rd1+4], %r9;\n"
    err, got = launch(kernel(body), np.zeros(2, np.uint32), np.zeros(1, np.uint32), 1, 1)
    assert err == driver.OK, fault_text(err)
    # selector nibbles, lowest first: 0x7340 picks bytes 0 (0x81), 4 (0x05), 3 (0x84), 7 (0x08);
    # 0x0b0a: byte 2's sign (0x83: 0xff), byte 0, byte 3's sign (0x84: 0xff), byte 0
    assert got.tolist() == [0x08840581, 0x81FF81FF]


def test_vote_ballot_counts_the_lanes_of_each_warp_of_its_cta():
    body = "\tsetp.ne.u32 %p1, %r1, 1000;\n\tvote.sync.ballot.b32 %r6, %p1, -1;\n"
    body += (
        "\tmul.wide.u32 %rd3, %r4, 4;\n\tadd.s64 %rd5, %rd1, %rd3;\n\tst.global.u32 [%rd5], %r6;\n"
    )
    err, got = launch(kernel(body), np.zeros(96, np.uint32), np.zeros(1, np.uint32), 2, 48)
    assert err == driver.OK, fault_text(err)
    per_cta = [0xFFFFFFFF] * 32 + [0xFFFF] * 16  # a CTA of 48 threads: a full and a half warp
    assert got.tolist() == per_cta * 2


def test_saturating_integer_conversions_clamp_as_integers():
    body = "\tld.global.u64 %rd6, [%rd2];\n\tcvt.sat.s64.u64 %rd7, %rd6;\n\tst.global.u64 [%rd1], %rd7;\n"
    body += "\tcvt.sat.s32.u64 %r6, %rd6;\n\tst.global.u32 [%rd1+8], %r6;\n"
    err, got = launch(kernel(body), np.zeros(2, np.uint64), np.array([2**64 - 1], np.uint64), 1, 1)
    assert err == driver.OK, fault_text(err)
    assert got.view(np.int64)[0] == 2**63 - 1 and got.view(np.int32)[2] == 2**31 - 1


def test_a_shuffle_from_past_the_ctas_last_thread_is_a_launch_failure():
    body = "\tshfl.sync.idx.b32 %r6, %r1, 20, 31, -1;\n"
    err, _ = launch(kernel(body), np.zeros(1, np.uint32), np.zeros(1, np.uint32), 2, 48)
    assert err == driver.CUresult.CUDA_ERROR_LAUNCH_FAILED and "past the CTA" in fault_text(err)


def test_fma_float64_keeps_signed_zeros_and_infinite_addends():
    got = fma(
        np.array([-0.0, 1e200, 1e200]),
        np.array([5.0, 1e200, -1e200]),
        np.array([-0.0, -np.inf, np.inf]),
    )
    assert np.signbit(got[0]) and got[0] == 0.0
    assert got[1] == -np.inf and got[2] == np.inf


EXCHANGE = (
    slot("%r1")
    + "\tadd.s32 %r6, %r1, 100;\n\tst.shared.u32 [%rd11], %r6;\n{barrier}"
    + "\tadd.s32 %r7, %r1, 32;\n\tand.b32 %r7, %r7, 63;\n"
    + slot("%r7")
    + "\tld.shared.u32 %r8, [%rd11];\n"
    + store_out("%r8")
)


@pytest.mark.parametrize("serial", [False, True], ids=["lockstep", "warp-serial"])
@pytest.mark.parametrize("barrier", [True, False], ids=["barrier", "no-barrier"])
def test_warp_serial_runs_show_a_missing_barrier(monkeypatch, serial, barrier):
    # each thread writes its slot, then reads the slot of a thread in the other warp
    monkeypatch.setattr(machine, "WARP_SERIAL", serial)
    body = EXCHANGE.format(barrier="\tbar.sync 0;\n" if barrier else "")
    err, got = launch(
        kernel(body, BARRIER_AFTER_LOOP), np.zeros(64, np.uint32), np.zeros(1, np.uint32), 1, 64
    )
    assert err == driver.OK, fault_text(err)
    right = [100 + (t + 32) % 64 for t in range(64)]
    assert (got.tolist() == right) is (barrier or not serial)  # lockstep hides the race


def _mma_body(kind: str) -> str:
    """Each thread loads its A (4 words), B (2) and C (4 floats) fragments from in[10 t ..],
    runs one mma.sync and stores D to out[4 t ..]."""
    body = "\tmul.wide.u32 %rd3, %r4, 40;\n\tadd.s64 %rd4, %rd2, %rd3;\n"
    body += "".join(f"\tld.global.u32 %r{10 + k}, [%rd4+{4 * k}];\n" for k in range(6))
    body += "".join(f"\tld.global.f32 %f{1 + k}, [%rd4+{24 + 4 * k}];\n" for k in range(4))
    body += (
        f"\tmma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32 {{%f5,%f6,%f7,%f8}},"
        " {%r10,%r11,%r12,%r13}, {%r14,%r15}, {%f1,%f2,%f3,%f4};\n"
    )
    body += "\tmul.wide.u32 %rd5, %r4, 16;\n\tadd.s64 %rd6, %rd1, %rd5;\n"
    body += "".join(f"\tst.global.f32 [%rd6+{4 * k}], %f{5 + k};\n" for k in range(4))
    return body


def _fragments(lane: int):
    """The PTX ISA's element places for lane (mma.m16n8k16, floating point): A's eight,
    B's four and C's four (row, column) in register order, low half first."""
    g, t = lane >> 2, lane % 4
    a = [
        (g if i in (0, 1, 4, 5) else g + 8, 2 * t + (i & 1) + (8 if i >= 4 else 0))
        for i in range(8)
    ]
    b = [(2 * t + (i & 1) + (8 if i >= 2 else 0), g) for i in range(4)]
    c = [(g if i < 2 else g + 8, 2 * t + (i & 1)) for i in range(4)]
    return a, b, c


@pytest.mark.parametrize("kind", ["f16", "bf16"])
def test_mma_multiplies_fragments_laid_out_as_the_ptx_isa_says(kind):
    rng = np.random.default_rng(5)
    a, b, c = (
        rng.integers(-8, 9, (16, 16)),
        rng.integers(-8, 9, (16, 8)),
        rng.standard_normal((16, 8)),
    )
    a, b, c = a.astype(np.float32), b.astype(np.float32), c.astype(np.float32)

    def bits(x: float) -> int:
        if kind == "f16":
            return int(np.float16(x).view(np.uint16))
        return int(np.float32(x).view(np.uint32)) >> 16  # small integers: exact in bfloat16

    words = np.zeros((32, 10), np.uint32)
    for lane in range(32):
        fa, fb, fc = _fragments(lane)
        for r in range(4):
            words[lane, r] = bits(a[fa[2 * r]]) | bits(a[fa[2 * r + 1]]) << 16
        for r in range(2):
            words[lane, 4 + r] = bits(b[fb[2 * r]]) | bits(b[fb[2 * r + 1]]) << 16
        words[lane, 6:] = np.array([c[p] for p in fc], np.float32).view(np.uint32)
    text = kernel(_mma_body(kind), shared="\t.reg .f32 %f<16>;\n")
    err, got = launch(text, np.zeros((32, 4), np.float32), words, 1, 32)
    assert err == driver.OK, fault_text(err)
    want = (a.astype(np.float64) @ b + c).astype(np.float32)
    for lane in range(32):
        assert got[lane].tolist() == [want[p] for p in _fragments(lane)[2]]


def test_mma_without_its_whole_warp_is_a_launch_failure():
    text = kernel(_mma_body("f16"), shared="\t.reg .f32 %f<16>;\n")
    err, _ = launch(text, np.zeros((16, 4), np.float32), np.zeros((16, 10), np.uint32), 1, 16)
    assert "mma.sync runs without its whole warp" in fault_text(err)


# -- ldmatrix and cp.async ------------------------------------------------------------------
ROWS = "\t.shared .align 16 .b8 rows[512];\n"
FAR = 0x100000  # a row index whose address lies far past the window: reading it would fault


def _ldmatrix_body(shape: str, trans: bool) -> str:
    """Threads copy in's 32 rows of 8 halves to shared memory; thread t gives row table[t]
    (in's words 128 + t) to ldmatrix and stores its registers to out[4 t ..]."""
    count = int(shape[1])
    body = "\tand.b32 %r5, %r1, 31;\n\tmul.wide.u32 %rd3, %r5, 16;\n\tadd.s64 %rd4, %rd2, %rd3;\n"
    body += "\tld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd4];\n"
    body += "\tmov.u64 %rd9, rows;\n\tadd.s64 %rd10, %rd9, %rd3;\n"
    body += "\tst.shared.v4.u32 [%rd10], {%r10, %r11, %r12, %r13};\n\tbar.sync 0;\n"
    body += "\tmul.wide.u32 %rd5, %r1, 4;\n\tadd.s64 %rd6, %rd2, %rd5;\n"
    body += "\tld.global.u32 %r6, [%rd6+512];\n\tmul.wide.u32 %rd7, %r6, 16;\n"
    body += "\tadd.s64 %rd8, %rd9, %rd7;\n"
    regs = ", ".join(f"%r{20 + i}" for i in range(count))
    body += f"\tldmatrix.sync.aligned.m8n8.{shape}{'.trans' if trans else ''}.shared.b16"
    body += f" {{{regs}}}, [%rd8];\n"
    body += "\tmul.wide.u32 %rd11, %r1, 16;\n\tadd.s64 %rd12, %rd1, %rd11;\n"
    body += "".join(f"\tst.global.u32 [%rd12+{4 * i}], %r{20 + i};\n" for i in range(count))
    return body


@pytest.mark.parametrize("trans", [False, True], ids=["rows", "trans"])
@pytest.mark.parametrize("shape", ["x1", "x2", "x4"])
def test_ldmatrix_gives_each_lane_the_ptx_isas_elements(shape, trans):
    count = int(shape[1])
    rng = np.random.default_rng(count + 3 * trans)
    data = rng.integers(0, 1 << 16, (32, 8), dtype=np.uint16)
    table = np.stack([rng.permutation(32) for _ in range(2)]).astype(np.uint32)  # per warp
    table[:, 8 * count :] = FAR  # lanes whose addresses ldmatrix does not read
    inp = np.concatenate([data.reshape(-1).view(np.uint32), table.reshape(-1)])
    err, got = launch(
        kernel(_ldmatrix_body(shape, trans), ROWS), np.zeros((64, 4), np.uint32), inp, 1, 64
    )
    assert err == driver.OK, fault_text(err)
    for t in range(64):
        warp, lane = divmod(t, 32)
        for i in range(count):
            # matrix i: the rows that lanes 8 i .. 8 i + 7 of this warp pointed at
            matrix = data[table[warp, 8 * i : 8 * i + 8]]
            if trans:  # "the matrix is loaded in column-major format": lane l holds its
                matrix = matrix.T  # transpose's elements where it would hold the matrix's
            low, high = matrix[lane // 4, 2 * (lane % 4)], matrix[lane // 4, 2 * (lane % 4) + 1]
            assert got[t, i] == int(low) | int(high) << 16, (t, i)
        assert not got[t, count:].any()


def test_ldmatrix_loads_the_fragments_mma_takes():
    # A (16 x 16, row-major) by ldmatrix.x4 and B (16 x 8, K x N row-major) by
    # ldmatrix.x2.trans, with CUTLASS's lane addresses, feed mma.sync straight: D = A B
    rng = np.random.default_rng(9)
    a = rng.integers(-8, 9, (16, 16)).astype(np.float16)
    b = rng.integers(-8, 9, (16, 8)).astype(np.float16)
    body = "\tmov.u64 %rd9, rows;\n"  # A at rows[0..512), B at rows[512..768)
    body += (
        "\tmul.wide.u32 %rd3, %r1, 16;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tadd.s64 %rd10, %rd9, %rd3;\n"
    )
    body += "\tld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd4];\n"
    body += "\tst.shared.v4.u32 [%rd10], {%r10, %r11, %r12, %r13};\n"
    body += "\tld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd4+512];\n"
    body += "\tst.shared.v4.u32 [%rd10+512], {%r10, %r11, %r12, %r13};\n\tbar.sync 0;\n"
    # A: lane l points at row l % 16, columns 8 (l / 16) ..; B: lane l at row l % 16
    body += "\tand.b32 %r5, %r1, 15;\n\tshr.u32 %r6, %r1, 4;\n"
    body += "\tmul.wide.u32 %rd5, %r5, 32;\n\tmul.wide.u32 %rd6, %r6, 16;\n"
    body += "\tadd.s64 %rd7, %rd9, %rd5;\n\tadd.s64 %rd7, %rd7, %rd6;\n"
    body += "\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r20, %r21, %r22, %r23}, [%rd7];\n"
    body += "\tmul.wide.u32 %rd8, %r5, 16;\n\tadd.s64 %rd8, %rd8, %rd9;\n"
    body += "\tldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r24, %r25}, [%rd8+512];\n"
    body += "\tmov.f32 %f1, 0f00000000;\n"
    body += (
        "\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f5,%f6,%f7,%f8},"
        " {%r20,%r21,%r22,%r23}, {%r24,%r25}, {%f1,%f1,%f1,%f1};\n"
    )
    body += "\tmul.wide.u32 %rd11, %r1, 16;\n\tadd.s64 %rd12, %rd1, %rd11;\n"
    body += "".join(f"\tst.global.f32 [%rd12+{4 * k}], %f{5 + k};\n" for k in range(4))
    shared = "\t.shared .align 16 .b8 rows[1024];\n\t.reg .f32 %f<16>;\n"
    pad = np.zeros(128, np.float16)  # thread t copies bytes 16 t of A and of B and padding
    inp = np.concatenate([a.reshape(-1), b.reshape(-1), pad]).view(np.uint32)
    err, got = launch(kernel(body, shared), np.zeros((32, 4), np.float32), inp, 1, 32)
    assert err == driver.OK, fault_text(err)
    want = a.astype(np.float32) @ b.astype(np.float32)
    for lane in range(32):
        assert got[lane].tolist() == [want[p] for p in _fragments(lane)[2]]


def test_ldmatrix_faults_on_a_misaligned_row_and_without_its_whole_warp():
    body = "\tmov.u64 %rd9, rows;\n\tmul.wide.u32 %rd3, %r1, 8;\n\tadd.s64 %rd4, %rd9, %rd3;\n"
    body += "\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r20}, [%rd4];\n"  # lane 1: 8 bytes in
    err, _ = launch(kernel(body, ROWS), np.zeros(1, np.uint32), np.zeros(1, np.uint32), 1, 32)
    assert err == driver.CUresult.CUDA_ERROR_MISALIGNED_ADDRESS
    body = "\tmov.u64 %rd9, rows;\n\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r20}, [%rd9];\n"
    err, _ = launch(kernel(body, ROWS), np.zeros(1, np.uint32), np.zeros(1, np.uint32), 1, 16)
    assert "ldmatrix runs without its whole warp" in fault_text(err)


SLOTS = "\t.shared .align 16 .b8 slots[2048];\n"
SENTINEL = 0xAAAAAAAA


def _snapshot(k: int) -> str:
    """PTX storing the thread's 48 bytes of slots to out[48 t + 12 k ..] (words)."""
    out = ""
    for part in range(3):
        regs = ", ".join(f"%r{10 + i}" for i in range(4))
        out += f"\tld.shared.v4.u32 {{{regs}}}, [%rd11+{16 * part}];\n"
        out += f"\tst.global.v4.u32 [%rd5+{48 * k + 16 * part}], {{{regs}}};\n"
    return out


def test_cp_async_completes_by_group_and_fills_zeros_past_src_size():
    # thread t: group 0 copies 16 bytes (cg), group 1 the first t % 17 of 16 (ca, src-size),
    # then 8 bytes and 4 bytes (ignored source where t is odd) stay uncommitted; the slots
    # are read before any wait, after wait_group 1, wait_group 0 and wait_all
    body = "\tmov.u64 %rd9, slots;\n\tmul.wide.u32 %rd10, %r1, 64;\n\tadd.s64 %rd11, %rd9, %rd10;\n"
    body += f"\tmov.u32 %r20, {SENTINEL};\n"
    body += "".join(
        f"\tst.shared.v4.u32 [%rd11+{16 * p}], {{%r20, %r20, %r20, %r20}};\n" for p in range(3)
    )
    body += "\tmul.wide.u32 %rd3, %r1, 32;\n\tadd.s64 %rd4, %rd2, %rd3;\n"
    body += "\tmul.wide.u32 %rd6, %r1, 192;\n\tadd.s64 %rd5, %rd1, %rd6;\n"
    body += "\trem.u32 %r6, %r1, 17;\n\tand.b32 %r7, %r1, 1;\n\tsetp.eq.u32 %p2, %r7, 1;\n"
    body += "\tcp.async.cg.shared.global [%rd11], [%rd4], 16;\n\tcp.async.commit_group;\n"
    body += "\tcp.async.ca.shared.global [%rd11+16], [%rd4+16], 16, %r6;\n"
    body += "\tcp.async.commit_group;\n"
    body += "\tcp.async.ca.shared.global [%rd11+32], [%rd4+8], 8;\n"
    body += "\tcp.async.ca.shared.global [%rd11+40], [%rd4+4], 4, %p2;\n"
    body += _snapshot(0) + "\tcp.async.wait_group 1;\n" + _snapshot(1)
    body += "\tcp.async.wait_group 0;\n" + _snapshot(2)
    body += "\tcp.async.wait_all;\n" + _snapshot(3)
    source = np.random.default_rng(4).integers(1, 255, (32, 32), dtype=np.uint8)
    err, got = launch(kernel(body, SLOTS), np.zeros((32, 4, 48), np.uint8), source, 1, 32)
    assert err == driver.OK, fault_text(err)
    for t in range(32):
        want = np.full(48, 0xAA, np.uint8)
        assert got[t, 0].tolist() == want.tolist()  # nothing lands before a wait
        want[:16] = source[t, :16]
        assert got[t, 1].tolist() == want.tolist()
        want[16:32] = 0
        want[16 : 16 + t % 17] = source[t, 16 : 16 + t % 17]
        assert got[t, 2].tolist() == want.tolist()  # uncommitted copies are not waited for
        want[32:40] = source[t, 8:16]
        want[40:44] = 0 if t % 2 else source[t, 4:8]
        assert got[t, 3].tolist() == want.tolist()


def test_cp_async_results_reach_other_threads_through_a_wait_and_a_barrier():
    # each thread copies its word into slot t, then reads the slot of t ^ 1
    body = "\tmov.u64 %rd9, slots;\n\tmul.wide.u32 %rd10, %r1, 16;\n\tadd.s64 %rd11, %rd9, %rd10;\n"
    body += "\tadd.s64 %rd4, %rd2, %rd10;\n\tcp.async.ca.shared.global [%rd11], [%rd4], 4;\n"
    body += "\tcp.async.commit_group;\n\tbar.sync 0;\n"  # no wait: the copy may not be there
    body += (
        "\txor.b32 %r6, %r1, 1;\n\tmul.wide.u32 %rd12, %r6, 16;\n\tadd.s64 %rd13, %rd9, %rd12;\n"
    )
    body += "\tld.shared.u32 %r7, [%rd13];\n\tcp.async.wait_group 0;\n\tbar.sync 0;\n"
    body += "\tld.shared.u32 %r8, [%rd13];\n"
    body += "\tmul.wide.u32 %rd3, %r1, 8;\n\tadd.s64 %rd5, %rd1, %rd3;\n"
    body += "\tst.global.u32 [%rd5], %r7;\n\tst.global.u32 [%rd5+4], %r8;\n"
    source = np.zeros((64, 4), np.uint32)
    source[:, 0] = np.arange(64) + 1000
    err, got = launch(kernel(body, SLOTS), np.zeros((64, 2), np.uint32), source, 1, 64)
    assert err == driver.OK, fault_text(err)
    assert not got[:, 0].any() and got[:, 1].tolist() == [1000 + (t ^ 1) for t in range(64)]


@pytest.mark.parametrize(
    "copy, code",
    [
        ("cp.async.cg.shared.global [%rd9], [%rd2+8], 16;", "CUDA_ERROR_MISALIGNED_ADDRESS"),
        ("cp.async.ca.shared.global [%rd9+4], [%rd2], 8;", "CUDA_ERROR_MISALIGNED_ADDRESS"),
        ("cp.async.ca.shared.global [%rd9], [%rd2+4096], 16;", "CUDA_ERROR_ILLEGAL_ADDRESS"),
    ],
    ids=["source", "destination", "past-the-data"],
)
def test_cp_async_faults_where_a_gpu_would(copy, code):
    body = f"\tmov.u64 %rd9, slots;\n\t{copy}\n\tcp.async.wait_all;\n"
    err, _ = launch(kernel(body, SLOTS), np.zeros(1, np.uint32), np.zeros(16, np.uint32), 1, 1)
    assert err == driver.CUresult[code], fault_text(err)


def test_cp_async_with_src_size_zero_reads_nothing():
    # a zero-filling copy names an address past the data: nothing is read, zeros land
    body = "\tmov.u64 %rd9, slots;\n\tmov.u32 %r6, 0;\n"
    body += "\tcp.async.cg.shared.global [%rd9], [%rd2+4096], 16, %r6;\n\tcp.async.wait_all;\n"
    body += "\tld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%rd9];\n"
    body += "\tst.global.v4.u32 [%rd1], {%r10, %r11, %r12, %r13};\n"
    err, got = launch(kernel(body, SLOTS), np.ones(4, np.uint32), np.zeros(16, np.uint32), 1, 1)
    assert err == driver.OK, fault_text(err)
    assert got.tolist() == [0, 0, 0, 0]


# -- packing: bfi (LLVM builds small-integer vectors with it) and cvt to f16x2/bf16x2
def _bfi(pos: int, length: int) -> int:
    body = "\tmov.u32 %r6, 0xABCD1234;\n\tmov.u32 %r7, 0x55555555;\n"
    body += f"\tmov.u32 %r10, {pos};\n\tmov.u32 %r11, {length};\n"  # registers: any value
    body += "\tbfi.b32 %r8, %r6, %r7, %r10, %r11;\n\tst.global.u32 [%rd1], %r8;\n"
    err, got = launch(kernel(body), np.zeros(1, np.uint32), np.zeros(1, np.uint32), 1, 1)
    assert err == driver.OK, fault_text(err)
    return int(got[0])


@pytest.mark.parametrize(
    ("pos", "length", "want"),
    [
        (8, 8, 0x55553455),  # a's low byte 0x34 into bits 8..15
        (0, 0, 0x55555555),  # no bits: b unchanged
        (0, 32, 0xABCD1234),  # every bit: a
        (28, 8, 0x45555555),  # past the msb: a's low nibble 0x4 only
        (32, 4, 0x55555555),  # a position past the msb inserts nothing
        (0x104, 0x104, 0x55555545),  # pos and len take their low 8 bits: 4, 4
    ],
)
def test_bfi_inserts_a_field_clipped_at_the_msb(pos, length, want):
    assert _bfi(pos, length) == want


def _packed_pair(a: float, b: float) -> tuple[int, int]:
    """(cvt.rn.f16x2.f32, cvt.rn.bf16x2.f32) of the float32 values a and b."""
    body = "\tld.global.f32 %f1, [%rd2];\n\tld.global.f32 %f2, [%rd2+4];\n"
    body += "\tcvt.rn.f16x2.f32 %r8, %f1, %f2;\n\tcvt.rn.bf16x2.f32 %r9, %f1, %f2;\n"
    body += "\tst.global.u32 [%rd1], %r8;\n\tst.global.u32 [%rd1+4], %r9;\n"
    text = kernel(body).replace("\t.reg .b32 %r<32>;", "\t.reg .b32 %r<32>;\n\t.reg .f32 %f<4>;")
    err, got = launch(text, np.zeros(2, np.uint32), np.array([a, b], np.float32), 1, 1)
    assert err == driver.OK, fault_text(err)
    return int(got[0]), int(got[1])


@pytest.mark.parametrize(
    ("a", "b", "f16", "bf16"),
    [
        # a in the upper half, b in the lower; 1 + 2^-11 + 2^-20 is past float16's halfway
        (1 + 2**-11 + 2**-20, -np.inf, 0x3C01_FC00, 0x3F80_FF80),
        # exactly halfway: to the even neighbour (float16 1 + 2^-11, 1 + 3 * 2^-11)
        (1 + 2**-11, 1 + 3 * 2**-11, 0x3C00_3C02, 0x3F80_3F80),
        # bfloat16's halfway points: 1 + 2^-8 and 1 + 3 * 2^-8
        (1 + 2**-8, 1 + 3 * 2**-8, 0x3C04_3C0C, 0x3F80_3F82),
    ],
)
def test_cvt_packs_two_halves_rounded_to_nearest_even(a, b, f16, bf16):
    assert _packed_pair(a, b) == (f16, bf16)


def test_cvt_pairs_take_only_round_to_nearest():
    body = "\tmov.f32 %f1, 0f3F800000;\n\tcvt.rz.f16x2.f32 %r8, %f1, %f1;\n"
    text = kernel(body).replace("\t.reg .b32 %r<32>;", "\t.reg .b32 %r<32>;\n\t.reg .f32 %f<4>;")
    err, _ = launch(text, np.zeros(1, np.uint32), np.zeros(1, np.uint32), 1, 1)
    assert err != driver.OK and "only .rn" in fault_text(err)
