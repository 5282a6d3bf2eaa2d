import numpy as np
import pytest
import torch
from kernel_helpers import impl_of

import kael
from kael.frontend import eager
from kael.frontend.inspection import record_launches
from kael.runtime.device import CUDA
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl


def test_operands_on_two_devices_are_refused_before_any_launch():
    host = np.zeros(4, np.float32)
    fake_gpu = TensorImpl(
        Storage.external(host.ctypes.data, 16, host, CUDA), (4,), (1,), 0, kael.float32, CUDA
    )
    with pytest.raises(kael.Error, match="one device, but found cpu and cuda:0"):
        eager.copy_into(impl_of(np.empty(4, np.float32)), fake_gpu)


def test_one_template_serves_every_fill_value():
    a, b = np.empty(3, np.float64), np.empty(3, np.float64)
    eager.fill(impl_of(a), 1.25)
    before = len(eager._specialized)
    eager.fill(impl_of(b), -7.5)
    assert len(eager._specialized) == before
    assert a.tolist() == [1.25] * 3 and b.tolist() == [-7.5] * 3


_RAISING_INPLACE = {
    "remainder_": lambda a, b: a.remainder_(b),
    "floor_divide_": lambda a, b: a.floor_divide_(b),
    "ifloordiv": lambda a, b: a.__ifloordiv__(b),
    "imod": lambda a, b: a.__imod__(b),
    "out_is_input": lambda a, b: kael.remainder(a, b, out=a),
}


@pytest.mark.parametrize("op", list(_RAISING_INPLACE))
@pytest.mark.parametrize("divisor", ["tensor", "scalar"])
def test_inplace_op_that_raises_in_its_kernel_leaves_its_operand_unchanged(op, divisor):
    base = kael.tensor([[5, -6, 7, 8], [9, 10, -11, 12]])
    a = base[:, 1:]  # a view: the kernel writes through strides into base's storage
    b = kael.tensor([2, 0, 3]) if divisor == "tensor" else 0
    with pytest.raises(kael.Error, match="ZeroDivisionError: a divisor is 0"):
        _RAISING_INPLACE[op](a, b)
    assert base.tolist() == [[5, -6, 7, 8], [9, 10, -11, 12]]


def test_inplace_op_that_can_fault_still_writes_when_nothing_faults():
    a = kael.tensor([[5, -6, 7], [9, 10, -11]]).T  # transposed: the copy back keeps layout
    want = torch.tensor([[5, -6, 7], [9, 10, -11]]).T // torch.tensor([2, 3])
    a //= kael.tensor([2, 3])
    assert a.tolist() == want.tolist() and a.stride() == (1, 3)


@pytest.mark.parametrize("value", [2**63, 2**64 - 1, 2**64, -(2**63) - 1], ids=repr)
def test_fill_reads_an_int_beyond_int64_as_a_pytorch_scalar(value):
    # fill_, full and full_like take torch's Scalar range [-2**63, 2**64): a uint64 fills a
    # float or bool tensor by value and is refused by int64; beyond the range, refused.
    fills = {
        "fill_": lambda lib, dt: lib.zeros(2, dtype=dt).fill_(value),
        "full": lambda lib, dt: lib.full((2,), value, dtype=dt),
        "full_like": lambda lib, dt: lib.full_like(lib.zeros(2, dtype=dt), value),
    }
    for fill in fills.values():
        for name in ("float32", "float64", "int64", "bool"):
            try:
                want = fill(torch, getattr(torch, name))
            except (RuntimeError, OverflowError):
                with pytest.raises(kael.ValueError, match=f"^value {value} "):
                    fill(kael, getattr(kael, name))
                continue
            got = fill(kael, getattr(kael, name))
            assert got.tolist() == want.tolist() and str(got.dtype) == name


def test_an_eager_reduction_at_a_new_shape_plans_its_layout_once(monkeypatch):
    # the full door plans the launch it runs; the fast door then remembers that launch
    # from the same plan instead of laying the reduction out a second time
    from kael.frontend import fastpath

    planned = []
    real = eager.plan_reduction
    monkeypatch.setattr(eager, "plan_reduction", lambda *a: planned.append(a) or real(*a))
    monkeypatch.setattr(eager, "_reduction_plans", {})
    monkeypatch.setattr(fastpath, "_keyed", {})
    x = kael.randn(37, 13)
    got = x.sum(-1)
    assert len(planned) == 1
    assert np.allclose(got.numpy(), x.numpy().astype(np.float64).sum(-1), rtol=1e-6, atol=1e-6)
    x.sum(-1)  # now remembered by the fast door: no planning at all
    assert len(planned) == 1


def test_an_output_under_the_threshold_streams_when_the_ops_traffic_is_twice_it(monkeypatch):
    # int8 a + b: its inputs are twice its output, so they push it out of the caches anyway
    monkeypatch.setattr(eager, "NONTEMPORAL_BYTES", 64 << 10)
    streamed = {}
    for kib in (40, 44):  # 3 x 40 KiB < 128 KiB <= 3 x 44 KiB, both outputs under 64 KiB
        a, b = kael.ones(kib << 10, dtype=kael.int8), kael.ones(kib << 10, dtype=kael.int8)
        _, launched = record_launches(lambda x, y: x + y, a, b)
        streamed[kib] = launched[0].kernel.nontemporal
        # a broadcast operand is read once, not once per element: it does not count
        _, launched = record_launches(lambda x: x + kael.tensor(1, dtype=kael.int8), a)
        assert not launched[-1].kernel.nontemporal
    assert streamed == {40: False, 44: True}
    assert eager.streams(64 << 10, 64 << 10) and not eager.streams((64 << 10) - 1, 127 << 10)


@pytest.mark.parametrize(
    "op, fetched",
    [(kael.nn.functional.elu, True), (kael.nn.functional.silu, True), (kael.relu, False)],
    ids=["elu", "silu", "relu"],
)
def test_streaming_kernels_with_long_bodies_fetch_their_input_ahead(monkeypatch, op, fetched):
    """Vector math between the loads of a streamed output: the input is prefetched
    STREAM_FETCH_BYTES ahead; a short body (relu) and an output that stays in the caches
    leave the hardware prefetchers alone."""
    monkeypatch.setattr(eager, "NONTEMPORAL_BYTES", 1 << 16)
    x = kael.randn(3 << 14)  # 192 KiB: streamed under the lowered threshold
    _, launched = record_launches(op, x)
    (kernel,) = [launch.kernel for launch in launched]
    assert kernel.nontemporal
    assert (kernel.prefetch == 0) == fetched
    assert kernel.fetch_ahead == (eager.STREAM_FETCH_BYTES // 4 if fetched else 0)
    _, small = record_launches(op, kael.randn(1000))
    assert small[0].kernel.prefetch < 0 and not small[0].kernel.nontemporal


# (dtype, inner size): inner rows of 2, 4 or 8 bytes are copied as one integer word each
WORD_ROWS = [(kael.float32, 2), (kael.float16, 2), (kael.float16, 4), (kael.int8, 8),
             (kael.uint8, 2), (kael.bool, 4), (kael.int32, 2), (kael.float64, 1),
             (kael.int16, 3), (kael.float32, 4)]  # fmt: skip


def test_bool_copies_still_write_0_or_1_whatever_bytes_they_read():
    """bool rows never become words: a copy normalizes each byte, as kael's bool copy does."""
    raw = np.array([[0, 1, 2, 255, 7, 0, 0, 9]] * 3, np.uint8).view(np.bool_)
    got = kael.from_numpy(raw)[:, :4].contiguous()  # rows of 4 bytes, unit stride
    assert got.numpy().view(np.uint8).tolist() == [[0, 1, 1, 1]] * 3


@pytest.mark.parametrize("dtype, inner", WORD_ROWS, ids=str)
def test_copies_of_small_inner_rows_match_numpy_over_layouts(dtype, inner):
    """Whether or not the rows become words (2 to 8 bytes, unit stride, whole-row strides
    and offsets), a copy is every element's bits: transposed, sliced from a row's middle
    (offset not a whole row: no words), expanded and stepped layouts."""
    base = kael.tensor(RNG_WORDS.standard_normal((6, 5, 2 * inner)) * 50).to(dtype)
    array = base.numpy()
    views = [
        (
            base.reshape(6, 5, 2, inner).transpose(0, 1),
            array.reshape(6, 5, 2, inner).swapaxes(0, 1),
        ),
        (base[..., 1 : 1 + inner], array[..., 1 : 1 + inner]),
        (
            base[:, :1, :inner].expand(6, 4, inner),
            np.broadcast_to(array[:, :1, :inner], (6, 4, inner)),
        ),
        (base[::2, ::3, inner:], array[::2, ::3, inner:]),
    ]
    for view, want in views:
        got = view.contiguous()
        assert got.dtype is dtype and got.shape == want.shape
        np.testing.assert_array_equal(
            got.numpy().view(np.uint8), np.ascontiguousarray(want).view(np.uint8)
        )


RNG_WORDS = np.random.default_rng(8)
