"""The eager fast door (kael/frontend/fastpath.py): a remembered dense elementwise launch gives
the full door's result bit for bit, and every call it cannot serve takes the full door."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
import torch
from parity_helpers import resized_out

import kael
import kael.nn.functional as F
from kael.frontend import activations, eager, fastpath
from kael.frontend import elementwise as ew
from kael.frontend.inspection import record_launches

BINARY = list(ew.BINARY)
DTYPES = [kael.float32, kael.float64, kael.int64, kael.bool]


def _tensor(shape, dtype, seed=0) -> kael.Tensor:
    x = np.random.default_rng(seed).standard_normal(shape) * 4
    if dtype is kael.bool:
        return kael.tensor(x > 0)
    if dtype is kael.int64:
        return kael.tensor(x.astype(np.int64))
    return kael.tensor(x).to(dtype)


def _full(fn, *args, **kwargs) -> kael.Tensor:
    """fn's call through the full door: the fast one is closed while launches are recorded."""
    return record_launches(fn, *args, **kwargs)[0]


def _full_door(name, a, b) -> kael.Tensor:
    return _full(getattr(kael, name), a, b)


def _same(a: kael.Tensor, b: kael.Tensor) -> None:
    assert (a.shape, a.dtype, a.stride()) == (b.shape, b.dtype, b.stride())
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def _served(key) -> bool:
    return key in fastpath._entries


def _served_shaped(name: str, *operands) -> bool:
    """Whether the door by exact layouts holds this call's launch."""
    parts = fastpath._shaped_parts(name, *operands)
    return parts is not None and parts[0] in fastpath._shaped


def _try(fn, *args):
    try:
        return fn(*args)
    except kael.Error as e:
        return type(e)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("da", DTYPES)
@pytest.mark.parametrize("db", DTYPES)
def test_remembered_binary_gives_the_full_doors_bits(name, da, db):
    a, b = _tensor((7, 5), da, 1), _tensor((7, 5), db, 2)
    first = _try(getattr(kael, name), a, b)
    if isinstance(first, type):  # refused: never remembered, refused again
        assert _try(getattr(kael, name), a, b) is first
        return
    again = getattr(kael, name)(_tensor((3, 11), da, 3), _tensor((3, 11), db, 4))
    _same(again, _full_door(name, _tensor((3, 11), da, 3), _tensor((3, 11), db, 4)))


@pytest.mark.parametrize("number", [2.5, -3, 0.0, float("nan"), 7])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64])
def test_number_operands_on_either_side(number, dtype):
    for _ in range(2):  # the second call of each key is the fast one
        a = _tensor((4, 6), dtype, 5)
        got = [a * number, number - a, a / number]
        t = torch.from_numpy(a.numpy())
        want = [t * number, number - t, t / number]
        for g, w in zip(got, want):
            assert g.dtype == getattr(kael, str(w.dtype).split(".")[1])
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_zero_dim_tensors_keep_their_own_promotion():
    # a 0-d int64 tensor times a float32 tensor is float32; a 0-d float64 times int64 float64
    for _ in range(2):
        assert (kael.tensor(3) * _tensor((4,), kael.float32)).dtype is kael.float32
        assert (kael.tensor(2.0, dtype=kael.float64) * kael.tensor(3)).dtype is kael.float64


def test_views_with_an_offset_read_their_own_elements():
    base = kael.arange(300.0)
    for _ in range(2):
        got = base[100:200] + base[:100]
        np.testing.assert_array_equal(got.numpy(), np.arange(100.0, 200) + np.arange(100.0))


def test_calls_the_fast_door_cannot_serve_take_the_full_one():
    a, b = _tensor((64, 48), kael.float32, 6), _tensor((64, 48), kael.float32, 7)
    a + b
    assert _served(("add", kael.float32, kael.float32, False))
    t, u = torch.from_numpy(a.numpy()), torch.from_numpy(b.numpy())
    cases = [
        (a + b[0], t + u[0]),  # broadcasting
        (a.T + b.T, t.T + u.T),  # strided views
        (a[:, ::2] + b[:, ::2], t[:, ::2] + u[:, ::2]),
    ]
    for got, want in cases:
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    big = _tensor((600, 1000), kael.float32, 8)  # past the inline limit: the thread pool
    np.testing.assert_array_equal((big + big).numpy(), big.numpy() * 2)
    wide = kael.ones(3, dtype=kael.int64)
    with pytest.raises(kael.Error):
        wide + 2**70  # an int beyond int64 is judged by value
    assert kael.empty(0) + kael.empty(0) is not None


# clamp with number bounds, where and masked_fill over dense tensors of one shape: the door
# of several tensors and numbers (fastpath.dense), keyed by which operands are numbers.
# Each call takes the library (kael or torch) and x, a bool mask m and y.
DENSE_CALLS = {
    "clamp": lambda lib, x, m, y: x.clamp(-1.5, 2),
    "clamp min": lambda lib, x, m, y: x.clamp(min=-0.0),
    "clamp max": lambda lib, x, m, y: lib.clamp_max(x, 1),
    "clamp nan": lambda lib, x, m, y: x.clamp(float("nan"), 1.0),
    "clamp crossed": lambda lib, x, m, y: x.clamp(2, -2),
    "where": lambda lib, x, m, y: lib.where(m, x, y),
    "where number": lambda lib, x, m, y: lib.where(m, x, -0.0),
    "number where": lambda lib, x, m, y: lib.where(m, 3, y),
    "where numbers": lambda lib, x, m, y: lib.where(m, 1.5, -2),
    "masked_fill": lambda lib, x, m, y: x.masked_fill(m, -65504.0),
    "where -inf": lambda lib, x, m, y: lib.where(m, -float("inf"), y),
    "masked_fill int": lambda lib, x, m, y: x.masked_fill(m, 7),
}


@pytest.mark.parametrize("call", DENSE_CALLS.values(), ids=DENSE_CALLS.keys())
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64, kael.float16])
def test_remembered_dense_calls_give_the_full_doors_and_torchs_bits(call, dtype):
    def operands(seed, shape):
        x = _tensor(shape, dtype, seed)
        return x, _tensor(shape, kael.bool, seed + 1), _tensor(shape, dtype, seed + 2)

    first = _try(call, kael, *operands(1, (6, 7)))
    if isinstance(first, type):  # refused: never remembered, refused again
        assert _try(call, kael, *operands(1, (6, 7))) is first
        return
    for shape in [(6, 7), (3,), ()]:
        made = call(kael, *operands(2, shape))
        _same(made, _full(call, kael, *operands(2, shape)))
        want = call(torch, *(torch.from_numpy(v.numpy()) for v in operands(2, shape)))
        assert (str(made.dtype), made.stride()) == (str(want.dtype)[6:], want.stride())
        np.testing.assert_array_equal(made.numpy(), want.numpy())


def test_dense_calls_the_door_cannot_serve_take_the_full_one():
    x, m = _tensor((4, 6), kael.float32, 3), _tensor((4, 6), kael.bool, 4)
    t, tm = torch.from_numpy(x.numpy()), torch.from_numpy(m.numpy())
    x.clamp(-1, 1), kael.where(m, x, x), x.masked_fill(m, 0.0)  # remembered
    cases = [
        (x.T.clamp(-1, 1), t.T.clamp(-1, 1)),  # a strided view
        (kael.where(m[0], x, 1.0), torch.where(tm[0], t, 1.0)),  # broadcasting
        (x.masked_fill(m[:1], 2.0), t.masked_fill(tm[:1], 2.0)),
        (x.clamp(kael.tensor(-1.0), 1), t.clamp(torch.tensor(-1.0), 1)),  # a 0-d bound
        (x.masked_fill(m, kael.tensor(5.0)), t.masked_fill(tm, torch.tensor(5.0))),
    ]
    for got, want in cases:  # (kael's elementwise results are row-major, torch's follow x)
        assert got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(kael.ValueError, match="1e\\+39 cannot be converted to type float32"):
        x.masked_fill(m, 1e39)  # the range check stays on the fast door
    with pytest.raises(kael.TypeError, match="bool mask"):
        x.masked_fill(x, 1.0)
    with pytest.raises(kael.Error):
        kael.ones(3, dtype=kael.int64).clamp(0, 2**70)  # an int beyond int64: the full door


def test_a_uint8_condition_warns_once_and_is_not_remembered():
    """The deprecation warning is torch's once-a-process one; every call takes the full
    door, which reads the condition as nonzero-is-True."""
    x, m = _tensor((4,), kael.float32), kael.tensor([1, 0, 2, 0], dtype=kael.uint8)
    with pytest.warns(UserWarning, match="uint8 condition"):
        first = kael.where(m, x, 0.0)
    for got in (first, kael.where(m, x, 0.0), kael.where(m, x, 0.0)):
        np.testing.assert_array_equal(got.numpy(), np.where(m.numpy() != 0, x.numpy(), 0))


def test_clamp_bounds_convert_apart_from_equal_numbers_of_other_types():
    """The door's number words are memoized by type and value: 2 and 2.0 bound an int
    tensor to different result dtypes, and 0.0 and -0.0 stay apart."""
    a = kael.tensor([1, 5, -3])
    for _ in range(2):
        assert a.clamp(0, 2).dtype is kael.int64 and a.clamp(0, 2.0).dtype is kael.float32
        assert str(kael.tensor([-1.0, 1.0]).clamp(max=-0.0)[1].item()) == "-0.0"
        assert str(kael.tensor([-1.0, 1.0]).clamp(max=0.0)[1].item()) == "0.0"


CAST_DTYPES = [kael.float32, kael.float64, kael.int64, kael.int8, kael.bool, kael.bfloat16]


@pytest.mark.parametrize("src", CAST_DTYPES, ids=str)
@pytest.mark.parametrize("dst", CAST_DTYPES, ids=str)
def test_remembered_casts_give_the_full_doors_bits(src, dst):
    name = {kael.float32: "float", kael.float64: "double", kael.int64: "long"}.get(dst)
    for shape in [(5, 3), (70,), ()]:
        x = _tensor(shape, src, 9)
        for made in (x.to(dst), x.to(dtype=dst)) + ((getattr(x, name)(),) if name else ()):
            if dst is src:
                assert made is x
                continue
            full = _full(lambda t: t.to(dst), x)
            assert (made.shape, made.dtype, made.stride()) == (full.shape, dst, full.stride())
            wide = [v.to(kael.float64).numpy() for v in (made, full)]
            np.testing.assert_array_equal(*wide)
            t = torch.from_numpy(x.float().numpy() if src is kael.bfloat16 else x.numpy())
            want = t.to(torch.bfloat16 if src is kael.bfloat16 else t.dtype).to(
                getattr(torch, str(dst))
            )
            if not (src.is_floating_point and not dst.is_floating_point and dst is not kael.bool):
                assert str(made.dtype) == str(want.dtype)[6:]
                np.testing.assert_array_equal(made.float().numpy(), want.float().numpy())


def test_casts_the_door_cannot_serve_take_the_full_one():
    x = _tensor((4, 6), kael.float32, 3)
    x.double()
    assert x.T.double().stride() == (1, 6)  # preserve_format keeps a dense view's layout
    cl = kael.randn(2, 3, 4, 5).to(memory_format=kael.channels_last)
    assert cl.double().stride() == cl.stride()
    assert x.to(kael.complex64).dtype is kael.complex64
    assert x.double(memory_format=kael.contiguous_format).dtype is kael.float64
    with pytest.raises(kael.TypeError, match="argument 'memory_format'"):
        x.double(memory_format=3)


def test_faulting_kernels_are_never_remembered():
    a, b = kael.tensor([6, 7]), kael.tensor([3, 0])
    for _ in range(2):
        with pytest.raises(kael.Error, match="ZeroDivisionError"):
            a // b
    assert not _served(("floor_divide", kael.int64, kael.int64, False))


def test_recorded_launches_still_see_every_call():
    a = _tensor((5,), kael.float32)
    a + a
    _, made = record_launches(lambda: a + a)
    assert [m.symbol.startswith("kael_add") for m in made] == [True]


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_in_place_moves_the_version_and_matches_the_full_door(name):
    for _ in range(2):
        a, b = _tensor((5, 9), kael.float64, 9), _tensor((5, 9), kael.float32, 10)
        want = getattr(torch.from_numpy(a.numpy()), name)(torch.from_numpy(b.numpy()))
        version = a._impl.storage.version
        assert getattr(a, f"{name}_")(b) is a
        assert a._impl.storage.version == version + 1
        np.testing.assert_array_equal(a.numpy(), want.numpy())
    assert _served((f"{name}_", kael.float64, kael.float32, False))


def test_in_place_from_an_overlapping_view_reads_the_old_values():
    # remembered by a plain call, then asked with its own shifted view: the full door
    # copies the source first, as eager always did
    x = kael.arange(10.0)
    x[1:].add_(kael.ones(9))
    y = kael.arange(10.0)
    y[1:].add_(y[:-1])
    np.testing.assert_array_equal(y.numpy(), [0, 1, 3, 5, 7, 9, 11, 13, 15, 17])
    z = kael.arange(4.0)
    z.add_(z)  # the same place: served, and right
    np.testing.assert_array_equal(z.numpy(), [0, 2, 4, 6])


def test_in_place_refusals_stay():
    a = kael.ones(4, dtype=kael.int64)
    for _ in range(2):
        with pytest.raises(kael.TypeError, match="can't be cast"):
            a.add_(kael.ones(4))
    e = kael.ones(1).expand(4)
    with pytest.raises(kael.Error, match="more than one element"):
        e.add_(kael.ones(4))


@pytest.mark.parametrize("name", list(ew.UNARY))
@pytest.mark.parametrize("dtype", DTYPES)
def test_remembered_unary_gives_the_full_doors_bits(name, dtype):
    for _ in range(2):
        x = _tensor((6, 7), dtype, 11)
        got = _try(getattr(kael, name), x)
        if isinstance(got, type):  # refused (bitwise_not of a float): refused every time
            continue
        _same(got, _full(getattr(kael, name), x))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.float16])
def test_gelu_is_remembered_under_its_ir_op_and_gives_the_full_doors_bits(approximate, dtype):
    x = _tensor((6, 7), dtype, 5)
    for _ in range(2):
        _same(F.gelu(x, approximate=approximate), _full(F.gelu, x, approximate=approximate))
    assert _served((ew.GELU_OPS[approximate], dtype))
    out = kael.empty((6, 7), dtype=dtype)
    assert F.gelu(x, approximate=approximate, out=out) is out
    _same(out, _full(F.gelu, x, approximate=approximate))


def test_gelu_refusals_stay_with_a_remembered_launch():
    x = _tensor((6, 7), kael.float32, 5)
    F.gelu(x)
    with pytest.raises(kael.ValueError, match="'fast'"):
        F.gelu(x, approximate="fast")
    with pytest.raises(kael.TypeError, match="gelu"):
        F.gelu(_tensor((6, 7), kael.int64, 5))


# every activation callable with its input alone (threshold's parameters are required)
PLAIN_ACTIVATIONS = sorted(
    n for n, a in activations.ACTIVATIONS.items() if all(v is not None for _, v in a.params)
)


@pytest.mark.parametrize("name", PLAIN_ACTIVATIONS)
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.float16])
def test_activations_at_their_defaults_are_remembered_with_the_full_doors_bits(name, dtype):
    fn = getattr(F, name)
    for x in (_tensor((6, 7), dtype, 3), _tensor((7, 6), dtype, 4).mT):  # dense, then by layout
        for _ in range(2):
            _same(fn(x), _full(fn, x))
    assert _served(("F." + name, dtype))


@pytest.mark.parametrize("name", ["tanhshrink", "softsign"])
def test_integer_activations_follow_the_default_dtype_and_are_not_remembered(name):
    x = _tensor((3, 4), kael.int64, 6)
    fn = getattr(F, name)
    assert fn(x).dtype == kael.float32
    kael.set_default_dtype(kael.float64)
    try:
        got = fn(x)
    finally:
        kael.set_default_dtype(kael.float32)
    assert got.dtype == kael.float64
    want = getattr(torch.nn.functional, name)(torch.from_numpy(x.numpy()).double())
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    assert not _served(("F." + name, kael.int64))


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [("elu", {"alpha": 2.0}), ("leaky_relu", {"negative_slope": 0.2}),
     ("softplus", {"beta": 2.0}), ("hardtanh", {"min_val": -0.5}), ("celu", {"alpha": 0.5})],
)  # fmt: skip
def test_a_remembered_default_call_does_not_serve_other_parameters(name, kwargs):
    x = _tensor((6, 7), kael.float32, 9)
    fn = getattr(F, name)
    fn(x), fn(x)  # remembered at the defaults
    want = getattr(torch.nn.functional, name)(torch.from_numpy(x.numpy()), **kwargs)
    np.testing.assert_allclose(fn(x, **kwargs).numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
    first = next(iter(kwargs.values()))
    np.testing.assert_allclose(fn(x, first).numpy(), want.numpy(), rtol=1e-6, atol=1e-7)


def test_activation_calls_with_arguments_take_the_full_door():
    x = _tensor((6, 7), kael.float32, 8)
    F.selu(x)
    y = x.clone()
    assert F.selu(y, True) is y and F.selu(y.clone(), inplace=False) is not y
    _same(y, _full(F.selu, x))
    with pytest.raises(kael.TypeError, match="unexpected keyword"):
        F.selu(x, alpha=2.0)


def test_concurrent_first_calls_agree():
    a, b = _tensor((33,), kael.float64, 12), _tensor((33,), kael.int64, 13)
    want = a.numpy() * b.numpy()
    errors = []

    def work():
        for _ in range(200):
            if not np.array_equal((a * b).numpy(), want):
                errors.append("mismatch")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_uses_the_remembered_launches():
    a = _tensor((20,), kael.float32, 14)
    a + a  # remembered in the parent
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only when the fast door gives the right answer
        ok = np.array_equal((a + a).numpy(), a.numpy() * 2)
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


# ---- reductions -------------------------------------------------------------------------------

REDUCTIONS = ["sum", "prod", "mean", "amax", "amin", "argmax", "argmin", "all", "any"]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize(
    "args, kwargs",
    [((), {}), ((0,), {}), ((1,), {"keepdim": True}), ((), {"dim": (0, 1)}), ((-1, True), {})],
)
def test_remembered_reduction_gives_the_full_doors_bits(name, args, kwargs):
    fn = getattr(kael, name)
    x = _tensor((9, 13), kael.float32, 15)
    if name == "mean" or name in ("argmax", "argmin") and "dim" in kwargs:
        x = x if name == "mean" else None
    if x is None:  # argmax takes one dim only
        return
    fn(x, *args, **kwargs)
    for _ in range(2):
        again = fn(_tensor((9, 13), kael.float32, 16), *args, **kwargs)
        _same(again, _full(fn, _tensor((9, 13), kael.float32, 16), *args, **kwargs))


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("shape", [(300, 200), (640, 1024)])  # 4 blocks; 40 on the pool
def test_a_reduction_over_several_blocks_is_remembered_with_its_tree(name, shape):
    from kael.frontend import fastpath

    fn = getattr(kael, name)
    x = _tensor(shape, kael.float32, 19)
    saved = kael.get_num_threads()
    try:
        kael.set_num_threads(2)
        fn(x)
        served = [e for k, e in fastpath._keyed.items() if k[0] == name and k[3] == shape]
        assert served and all(getattr(e, "final", None) is not None for e in served)
        for seed in (20, 21):
            y = _tensor(shape, kael.float32, seed)
            _same(fn(y), _full(fn, y))  # the door's tree, the full door's tree: one order
    finally:
        kael.set_num_threads(saved)


def test_a_remembered_tree_keeps_the_gil_below_release_bytes():
    # the tree's work items are its outputs: a 2 KiB tree (64 rows over several blocks)
    # keeps the GIL for all of them, as the full door's launch of it does (it once let the
    # GIL go from its 32nd output: the tree's bytes were taken for each output's)
    from kael.runtime.launcher import RELEASE_BYTES

    x = _tensor((64, 50000), kael.float32, 22)
    for _ in range(2):
        x.sum(1)
    [entry] = [e for k, e in fastpath._keyed.items() if k[0] == "sum" and k[3] == x.shape]
    assert entry.final is not None and entry.scratch[0] < RELEASE_BYTES
    assert entry.final.release_items > entry.outputs


def test_reduction_keys_hold_shape_strides_offset_and_dtype():
    base = _tensor((40, 30), kael.float64, 17)
    views = [base, base[5:25], base[5:25].T, base[:, 3:9]]
    for _ in range(2):
        for v in views:
            t = torch.from_numpy(v.numpy())
            np.testing.assert_allclose(v.sum(0).numpy(), t.sum(0).numpy(), rtol=1e-12)
            np.testing.assert_allclose(
                v.mean(-1, keepdim=True).numpy(), t.mean(-1, keepdim=True).numpy(), rtol=1e-12
            )
        assert base.sum(dtype=kael.float32).dtype is kael.float32
        assert base.sum().dtype is kael.float64


def test_reduction_refusals_stay():
    empty = kael.empty(0, 3)
    for _ in range(2):
        with pytest.raises(kael.IndexError, match="empty dimension"):
            empty.amax(0)
        with pytest.raises(kael.TypeError):
            kael.ones(3, dtype=kael.int64).mean()
    assert kael.tensor([[1.0, 2.0]]).sum(dim=[0, 1]).item() == 3.0  # a list of dims: no key


PAIR_LAYOUTS = [
    ((9, 13), lambda x: x),
    ((13, 9), lambda x: x.T),
    ((20, 13), lambda x: x[3:12, 1:]),
    ((300, 200), lambda x: x),
    ((2, 200000), lambda x: x),  # dim -1: several blocks a row, the tree over partials
]


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("shape, view", PAIR_LAYOUTS)
@pytest.mark.parametrize("dim, keepdim", [(0, False), (-1, False), (1, True)])
def test_a_values_indices_pair_is_remembered_and_replayed_as_the_pair(
    name, shape, view, dim, keepdim
):
    from kael.frontend.reductions import ValuesIndices

    fn = getattr(kael, name)
    fn(view(_tensor(shape, kael.float32, 40)), dim, keepdim)
    for seed in (41, 42):
        x = view(_tensor(shape, kael.float32, seed))
        got = fn(x, dim, keepdim=keepdim)
        served = [
            e for k, e in fastpath._keyed.items()
            if k[0] == name and k[3:5] == (x.shape, x._impl.strides) and k[-1] == kael.get_num_threads()
        ]  # fmt: skip
        assert served and served[0] is not fastpath._UNSERVED
        assert type(got) is ValuesIndices and got.values is got[0] and got.indices is got[1]
        want = getattr(torch, name)(torch.from_numpy(x.numpy()), dim, keepdim=keepdim)
        for g, w in zip(got, want):
            assert g.shape == tuple(w.shape) and g.dtype.name == str(w.dtype).split(".")[1]
            np.testing.assert_array_equal(g.numpy(), w.numpy())
        full = _full(fn, x, dim, keepdim=keepdim)
        _same(got.values, full.values)
        _same(got.indices, full.indices)


def test_max_of_the_whole_tensor_and_of_two_tensors_keep_their_forms():
    x, y = _tensor((5, 6), kael.float64, 43), _tensor((5, 6), kael.float64, 44)
    for _ in range(2):
        whole = kael.max(x)
        assert type(whole) is kael.Tensor and whole.item() == x.numpy().max()
        both = x.max(y)
        np.testing.assert_array_equal(both.numpy(), np.maximum(x.numpy(), y.numpy()))
        assert x.min(dim=1).indices.dtype is kael.int64


ORDERINGS = [  # (name, args, kwargs, whether the rows are along the last dim)
    ("topk", (3,), {}, True),
    ("topk", (2,), {"largest": False}, True),
    ("topk", (5, 0), {}, False),  # along dim 0: rows copied, nothing remembered
    ("sort", (), {}, True),
    ("sort", (), {"descending": True, "stable": True}, True),
    ("sort", (), {"dim": 0}, False),
    ("argsort", (), {"dim": -1}, True),
]


def _with_ties_and_nan(shape, seed) -> kael.Tensor:
    x = np.round(np.random.default_rng(seed).standard_normal(shape), 1).astype(np.float32)
    x.flat[::7] = np.nan
    return kael.tensor(x)


@pytest.mark.parametrize("name, args, kwargs, last", ORDERINGS, ids=str)
@pytest.mark.parametrize("shape, view", PAIR_LAYOUTS[:3])
def test_an_ordering_is_remembered_and_replayed(name, args, kwargs, last, shape, view):
    fn = getattr(kael, name)
    fn(view(_with_ties_and_nan(shape, 60)), *args, **kwargs)
    for seed in (61, 62):
        x = view(_with_ties_and_nan(shape, seed))
        got = fn(x, *args, **kwargs)
        # torch's topk orders ties its own way, and its sort is stable when asked to be
        stable = {} if name == "topk" else {"stable": True}  # (torch: dim= then a keyword)
        want = getattr(torch, name)(torch.from_numpy(x.numpy()), *args, **kwargs | stable)
        full = _full(fn, x, *args, **kwargs)
        pairs = zip(got, want, full) if name != "argsort" else [(got, want, full)]
        for (g, w, f), part in zip(
            pairs, ("values", "indices") if name != "argsort" else ("indices",)
        ):
            assert g.shape == tuple(w.shape) and g.dtype.name == str(w.dtype)[6:]
            if part == "values" or name != "topk":
                np.testing.assert_array_equal(g.numpy(), w.numpy())
            _same(g, f)
        if name == "topk":  # the indices point at the values
            dim = args[1] if args[1:] else -1
            np.testing.assert_array_equal(x.gather(dim, got.indices).numpy(), got.values.numpy())
    if x.is_contiguous() and last:  # rows along the last dim: the kernel's own
        assert _row_served(name, x)


def _served_for(name: str, x) -> bool:
    """Whether the keyed door holds a remembered launch of `name` for x's layout."""
    i = x._impl
    return any(
        k[0] == name and k[3:5] == (i.shape, i.strides) and e is not fastpath._UNSERVED
        for k, e in fastpath._keyed.items()
    )


LOOKUPS = [  # (name, the call, whether it is remembered)
    ("gather", lambda lib, x, i: lib.gather(x, 1, i), True),
    ("index_select", lambda lib, x, i: lib.index_select(x, 0, i[0]), True),  # take_rows
    ("index_select", lambda lib, x, i: lib.index_select(x, 1, i[0]), True),  # the walk
    ("index_select", lambda lib, x, i: lib.index_select(x, 0, i[0].int()), False),  # converted
    ("index_select", lambda lib, x, i: lib.index_select(x, 0, i[:, 0]), False),  # copied
    ("index_select", lambda lib, x, i: lib.index_select(x, 1, i[:, 0]), True),  # strided walk
]


@pytest.mark.parametrize("name, call, remembered", LOOKUPS)
def test_a_lookup_by_index_is_remembered_and_replayed(name, call, remembered, monkeypatch):
    monkeypatch.setattr(fastpath, "_keyed", {})
    rng = np.random.default_rng(70)
    table = rng.standard_normal((12, 20)).astype(np.float32)
    for seed in range(3):
        picks = np.random.default_rng(seed).integers(0, 12, (4, 6))
        x, i = kael.tensor(table * (seed + 1)), kael.tensor(picks)
        got = call(kael, x, i)
        want = call(torch, torch.from_numpy(table * (seed + 1)), torch.from_numpy(picks))
        assert got.shape == tuple(want.shape) and got.dtype is kael.float32
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert _served_for(name, x) is remembered


def test_a_remembered_lookup_still_refuses_a_bad_index(monkeypatch):
    monkeypatch.setattr(fastpath, "_keyed", {})
    x = kael.tensor(np.arange(12.0).reshape(3, 4))
    good, bad = kael.tensor([[0, 2], [1, 1], [2, 0]]), kael.tensor([[0, 2], [1, 9], [2, 0]])
    for _ in range(2):
        x.gather(1, good)
        kael.index_select(x, 0, good[:, 0])
    assert _served_for("gather", x) and _served_for("index_select", x)
    with pytest.raises(kael.IndexError, match="9"):
        x.gather(1, bad)
    with pytest.raises(kael.IndexError, match="9"):
        kael.index_select(x, 0, bad[:, 1].contiguous())
    np.testing.assert_array_equal(x.gather(1, good).numpy(), [[0, 2], [5, 5], [10, 8]])


def test_an_embedding_lookup_is_remembered_and_replayed(monkeypatch):
    import torch.nn.functional as TF

    import kael.nn.functional as F

    monkeypatch.setattr(fastpath, "_keyed", {})

    weight = np.random.default_rng(71).standard_normal((50, 8)).astype(np.float32)
    w, tw = kael.tensor(weight), torch.from_numpy(weight)
    for seed in range(3):
        ids = np.random.default_rng(seed).integers(0, 50, (2, 5))
        got = F.embedding(kael.tensor(ids), w)
        want = TF.embedding(torch.from_numpy(ids), tw)
        assert got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert got.is_contiguous() and got.storage_offset() == 0
    assert _served_for("embedding", kael.tensor(ids))
    with pytest.raises(kael.IndexError):
        F.embedding(kael.tensor([[1, 50, 2, 3, 4], [0, 0, 0, 0, 0]]), w)
    renormed = F.embedding(kael.tensor(ids), kael.tensor(weight), max_norm=1.0)  # not keyed
    want = TF.embedding(torch.from_numpy(ids), torch.from_numpy(weight.copy()), max_norm=1.0)
    np.testing.assert_allclose(renormed.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["add", "sub"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64, kael.float16])
@pytest.mark.parametrize("alpha", [2, -0.5, 0])
def test_add_with_alpha_is_remembered_and_gives_the_full_doors_bits(name, dtype, alpha):
    if not dtype.is_floating_point and isinstance(alpha, float):
        return  # torch refuses a float alpha for an integer result (test_elementwise)
    fn = getattr(kael, name)
    shape = (3, 64)  # whole vectors: torch's half kernel takes its fma loop there too
    fn(_tensor(shape, dtype, 80), _tensor(shape, dtype, 81), alpha=alpha)
    assert any(k[:2] == (f"{name}_alpha", (dtype, dtype)) for k in fastpath._entries)
    for seed in (82, 84):
        x, y = _tensor(shape, dtype, seed), _tensor(shape, dtype, seed + 1)
        got = fn(x, y, alpha=alpha)
        _same(got, _full(fn, x, y, alpha=alpha))
        tx, ty = (torch.from_numpy(t.numpy()) for t in (x, y))
        np.testing.assert_array_equal(
            got.numpy(), getattr(torch, name)(tx, ty, alpha=alpha).numpy()
        )


SCANS = [
    ("cumsum", kael.float32, {}),
    ("cumsum", kael.int64, {}),
    ("cumsum", kael.bool, {}),
    ("cumsum", kael.float32, {"dtype": kael.float64}),
    ("cumprod", kael.float64, {}),
    ("logcumsumexp", kael.float32, {}),
]


@pytest.mark.parametrize("name, dtype, kwargs", SCANS, ids=str)
@pytest.mark.parametrize("shape, view", PAIR_LAYOUTS[:3])
@pytest.mark.parametrize("dim", [0, -1])
def test_a_scan_is_remembered_and_replayed(name, dtype, kwargs, shape, view, dim):
    fn = getattr(kael, name)
    fn(view(_tensor(shape, dtype, 50)), dim, **kwargs)
    for seed in (51, 52):
        x = view(_tensor(shape, dtype, seed))
        got = fn(x, dim, **kwargs)
        assert _row_served(name, x)
        t = torch.from_numpy(x.numpy())
        want = getattr(torch, name)(t, dim, **{k: torch.float64 for k in kwargs})
        assert got.shape == tuple(want.shape) and got.dtype.name == str(want.dtype)[6:]
        np.testing.assert_allclose(
            got.numpy(), want.numpy(), rtol=1e-5 if dtype.is_floating_point else 0
        )
        _same(got, _full(fn, x, dim, **kwargs))
        _same(getattr(x, name)(dim, **kwargs), got)


def test_an_in_place_scan_is_never_served_a_new_result():
    x = _tensor((6, 7), kael.float64, 53)
    want = np.cumsum(x.numpy(), 1)
    x.cumsum(1)  # remembered out of place
    assert x.cumsum_(1) is x
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-12)


ROW_KERNELS = [
    ("softmax", (-1,), {}),
    ("softmax", (), {"dim": 0}),
    ("log_softmax", (1,), {}),
    ("logsumexp", (-1,), {}),
    ("logsumexp", ((0, 1), True), {}),
]


def _row_served(name: str, x) -> list:
    i = x._impl
    return [
        e for k, e in fastpath._keyed.items()
        if k[0] == name and k[3:5] == (i.shape, i.strides) and k[-1] == kael.get_num_threads()
        and e is not fastpath._UNSERVED
    ]  # fmt: skip


@pytest.mark.parametrize("name, args, kwargs", ROW_KERNELS, ids=str)
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64])
def test_remembered_row_kernels_give_the_full_doors_bits(name, args, kwargs, dtype):
    fn = getattr(kael, name)
    x = _tensor((9, 13), dtype, 30)
    fn(x, *args, **kwargs)
    assert _row_served(name, x)
    for seed in (31, 32):
        y = _tensor((9, 13), dtype, seed)
        _same(fn(y, *args, **kwargs), _full(fn, y, *args, **kwargs))
        _same(getattr(y, name)(*args, **kwargs), _full(fn, y, *args, **kwargs))


def test_row_kernels_over_a_converted_copy_or_a_view_are_never_remembered():
    ints = _tensor((6, 5), kael.int64, 33)
    x = _tensor((6, 5), kael.float32, 34)
    for _ in range(2):  # each reads a copy the full door made, not the input
        _same(kael.softmax(ints, -1), _full(kael.softmax, ints, -1))
        _same(
            kael.softmax(x, -1, dtype=kael.float64), _full(kael.softmax, x, -1, dtype=kael.float64)
        )
        _same(kael.log_softmax(x.T, -1), _full(kael.log_softmax, x.T, -1))  # composed: 4 launches
    assert not _row_served("softmax", ints) and not _row_served("log_softmax", x.T)
    assert kael.softmax(x, -1, dtype=kael.float64).dtype is kael.float64


def test_row_kernel_refusals_and_out_calls_stay():
    x = _tensor((4, 3), kael.float32, 35)
    out = kael.empty(4)
    for _ in range(2):
        with pytest.raises(kael.IndexError, match="Dimension out of range"):
            kael.softmax(x, 2)
        assert kael.logsumexp(x, 1, out=out) is out
        _same(out, _full(kael.logsumexp, x, 1))
        assert kael.softmax(kael.empty(0, 3), -1).shape == (0, 3)


@pytest.mark.parametrize("threads", [1, 2])
def test_pool_sized_row_kernels_are_served_as_the_full_door_runs_them(threads):
    saved = kael.get_num_threads()
    try:
        kael.set_num_threads(threads)
        for shape in ((2048, 1024), (70000, 8)):  # long rows; short rows split in blocks
            x = _tensor(shape, kael.float32, 36)
            kael.softmax(x, -1)
            [entry] = _row_served("softmax", x)
            assert entry.align == (64 if shape[1] < 16 else 1)
            y = _tensor(shape, kael.float32, 37)
            _same(kael.softmax(y, -1), _full(kael.softmax, y, -1))
    finally:
        kael.set_num_threads(saved)


def test_reductions_follow_the_thread_count():
    x = _tensor((70, 300), kael.float32, 18)
    want = x.sum(0)
    saved = kael.get_num_threads()
    try:
        for threads in (1, 2, 3):
            kael.set_num_threads(threads)
            for _ in range(2):
                _same(x.sum(0), want)
    finally:
        kael.set_num_threads(saved)


# ---- matrix products --------------------------------------------------------------------------

PRODUCTS = [
    ((8, 5), (5, 3)),
    ((5,), (5, 3)),
    ((8, 5), (5,)),
    ((5,), (5,)),
    ((2, 8, 5), (5, 3)),
    ((2, 8, 5), (2, 5, 3)),
    ((1600, 20), (20,)),
]


@pytest.mark.parametrize("shapes", PRODUCTS, ids=str)
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64])
def test_remembered_products_give_the_full_doors_bits(shapes, dtype):
    sa, sb = shapes
    _tensor(sa, dtype, 19) @ _tensor(sb, dtype, 20)
    for seed in (21, 22):
        a, b = _tensor(sa, dtype, seed), _tensor(sb, dtype, seed + 10)
        _same(a @ b, _full(kael.matmul, a, b))


def test_transposed_and_offset_operands_are_keyed_apart():
    base = _tensor((50, 40), kael.float32, 23)
    v = _tensor((50,), kael.float32, 24)
    t, tv = torch.from_numpy(base.numpy()), torch.from_numpy(v.numpy())
    for _ in range(2):
        np.testing.assert_allclose((base.T @ v).numpy(), (t.T @ tv).numpy(), rtol=1e-5)
        np.testing.assert_allclose(
            (base[10:20] @ base[0]).numpy(), (t[10:20] @ t[0]).numpy(), rtol=1e-5
        )
        np.testing.assert_allclose(
            (base[:, 1:] @ v[:39]).numpy(), (t[:, 1:] @ tv[:39]).numpy(), rtol=1e-5
        )


def test_matrix_vector_products_are_one_native_call_without_frames():
    from kael.frontend import fastpath

    a, v = _tensor((50, 40), kael.float32, 27), _tensor((50,), kael.float32, 28)
    for m, x in ((a[:, :40], v[:40]), (a.T, v)):  # gemv reads A by rows, then by columns
        m @ x
        assert fastpath._products[fastpath._product_key(m, x)].direct is not None
        _same(m @ x, _full(kael.matmul, m, x))


def test_mixed_dtype_and_empty_products_take_the_full_door():
    a, b = _tensor((4, 3), kael.float32, 25), _tensor((3, 2), kael.float64, 26)
    for _ in range(2):
        assert (a @ b).dtype is kael.float64
        assert (kael.empty(4, 0) @ kael.empty(0, 2)).tolist() == [[0.0, 0.0]] * 4
    with pytest.raises(kael.ValueError, match="cannot be multiplied"):
        a @ a


# ---- fills ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("value", [0, 1, -7, 2.5, float("nan"), True])
def test_fast_fills_give_the_full_doors_bits(dtype, value):
    for _ in range(2):
        got = kael.full((3, 4), value, dtype=dtype)
        want = kael.empty(3, 4, dtype=dtype)
        eager.fill(want._impl, value)
        _same(got, want)
    assert _served(("fill", dtype, type(value)))
    np.testing.assert_array_equal(kael.zeros(5).numpy(), np.zeros(5, np.float32))
    np.testing.assert_array_equal(kael.ones(2, 3, dtype=dtype).numpy(), np.ones((2, 3)))


def test_fills_judged_by_value_take_the_full_door():
    for _ in range(2):
        with pytest.raises(kael.Error):
            kael.full((2,), 2**70, dtype=kael.int64)
        assert kael.full((2,), 2**63, dtype=kael.float64).tolist() == [2.0**63] * 2


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("da", [kael.float32, kael.int64])
@pytest.mark.parametrize("db", [kael.float64, kael.int64, kael.bool])
@pytest.mark.parametrize("zero_d_first", [False, True])
def test_a_zero_dim_operand_is_read_at_every_element(name, da, db, zero_d_first):
    # v / v.sum(): the 0-d tensor broadcasts with stride 0 and keeps its own promotion
    def operands(seed):
        a, b = _tensor((6, 4), da, seed), _tensor((), db, seed + 1)
        return (b, a) if zero_d_first else (a, b)

    first = _try(getattr(kael, name), *operands(27))
    if isinstance(first, type):
        assert _try(getattr(kael, name), *operands(27)) is first
        return
    for seed in (28, 29):
        got = getattr(kael, name)(*operands(seed))
        _same(got, _full_door(name, *operands(seed)))


def test_in_place_by_a_zero_dim_tensor():
    for _ in range(2):
        v = _tensor((50,), kael.float32, 30)
        want = v.numpy() / np.float32(3.0)
        v /= kael.tensor(3.0)
        np.testing.assert_array_equal(v.numpy(), want)


def test_fills_keep_the_sign_of_zero_and_the_kind_of_one():
    # -0.0 == 0.0 and True == 1 as dict keys: neither may be served as the other
    for _ in range(2):
        assert np.signbit(kael.full((2,), -0.0).numpy()).all()
        assert not np.signbit(kael.full((2,), 0.0).numpy()).any()
        assert kael.full((2,), True).dtype is kael.bool
        assert kael.full((2,), 1).dtype is kael.int64


def test_in_place_by_a_zero_dim_view_of_self_reads_it_before_writing():
    # A /= A[0] (a pivot): the 0-d view shares self's first element; the full door copies it
    v = kael.tensor([2.0, 4.0, 6.0])
    v /= kael.tensor(2.0)  # remembers div_ by a 0-d float32
    for _ in range(2):
        a = kael.tensor([2.0, 4.0, 6.0])
        a /= a[0]
        assert a.tolist() == [1.0, 2.0, 3.0]
        m = kael.tensor([[2.0, 4.0, 6.0], [1.0, 1.0, 1.0]])
        m[0] -= m[0, 0]
        assert m.tolist() == [[0.0, 2.0, 4.0], [1.0, 1.0, 1.0]]


def test_operator_methods_keep_keywords_and_argument_errors():
    a = kael.ones(3)
    a + a
    assert a.__add__(a, out=kael.empty(3)).tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        a.__add__()
    with pytest.raises(kael.TypeError, match="eq: expected a Tensor or a number, got object"):
        kael.eq(a, object())  # (as the full door always refused it)


@pytest.mark.parametrize("threads", [1, 2])
def test_launches_for_the_thread_pool_are_served_as_the_full_door_runs_them(threads):
    saved = kael.get_num_threads()
    kael.set_num_threads(threads)
    try:
        a, b = _tensor((700, 900), kael.float32, 31), _tensor((700, 900), kael.float32, 32)
        for _ in range(2):  # 7.5 MiB moved: past PARALLEL_BYTES, below streaming stores
            _same(a * b, _full(kael.mul, a, b))
            _same(a.sum(1), _full(kael.sum, a, 1))
            _same(a.exp(), _full(kael.exp, a))
    finally:
        kael.set_num_threads(saved)


# ---- calls keyed by exact layouts (broadcast, strided) -------------------------------------------


def _layouts(dtype, seed):
    """(a, b) pairs of one call shape each: broadcast rows and columns, transposed, stepped,
    offset views and a number."""
    base = _tensor((12, 10), dtype, seed)
    col = _tensor((12, 1), dtype, seed + 1)
    row = _tensor((10,), dtype, seed + 2)
    return [
        (base, row),
        (col, row),
        (base.T, base[:10, :10]),
        (base[:, ::3], col),
        (base[2:7, 1:], base[0, 1:]),
        (base.T, 2.5),
        (3, base[::2]),
    ]


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "eq", "lt", "pow"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64])
def test_calls_by_exact_layout_give_the_full_doors_bits(name, dtype):
    for i, (a, b) in enumerate(_layouts(dtype, 40)):
        first = _try(getattr(kael, name), a, b)
        if isinstance(first, type):  # refused: never remembered, refused again
            assert _try(getattr(kael, name), a, b) is first
            continue
        (a2, b2) = _layouts(dtype, 50)[i]  # other values, the same layouts
        got, full = getattr(kael, name)(a2, b2), _full_door(name, a2, b2)
        _same(got, full)
        assert got.stride() == full.stride()  # the full door's layout (a.T's: column-major)
    a, b = _layouts(dtype, 60)[0]
    if _try(getattr(kael, name), a, b) is not kael.TypeError:
        assert _served_shaped(name, a, b)


def test_layouts_of_one_shape_are_keyed_apart():
    x = _tensor((6, 6), kael.float32, 61)
    t = torch.from_numpy(x.numpy())
    for _ in range(2):
        np.testing.assert_array_equal((x + x.T).numpy(), (t + t.T).numpy())
        np.testing.assert_array_equal((x.T + x).numpy(), (t.T + t).numpy())
        np.testing.assert_array_equal((x[::2] - x[1::2]).numpy(), (t[::2] - t[1::2]).numpy())
        np.testing.assert_array_equal(
            (x[:, ::2] - x[:, :3]).numpy(), (t[:, ::2] - t[:, :3]).numpy()
        )


@pytest.mark.parametrize("name", ["neg", "exp", "sqrt", "abs", "logical_not"])
def test_strided_unary_calls_are_served_with_the_full_doors_bits(name):
    for seed in (62, 63):
        x = _tensor((9, 14), kael.float32, seed)[:, 1::3].T
        got = getattr(kael, name)(x)
        _same(got, _full(getattr(kael, name), x))
    assert fastpath.unary_key(name, x) in fastpath._shaped


def test_in_place_by_exact_layout_moves_the_version_and_matches_torch():
    for _ in range(2):
        x = _tensor((8, 12), kael.float64, 64)
        row = _tensor((6,), kael.float32, 65)
        t = torch.from_numpy(x.numpy().copy())
        view = x[:, ::2]
        version = x._impl.storage.version
        assert view.add_(row) is view
        t[:, ::2].add_(torch.from_numpy(row.numpy()))
        assert x._impl.storage.version == version + 1
        np.testing.assert_array_equal(x.numpy(), t.numpy())
        x.T.mul_(0.5)
        t.T.mul_(0.5)
        np.testing.assert_array_equal(x.numpy(), t.numpy())
    assert _served_shaped("add_", x[:, ::2], row)


def test_in_place_by_exact_layout_from_an_overlapping_view_reads_the_old_values():
    for _ in range(2):
        x = kael.arange(20.0).reshape(4, 5)
        t = torch.arange(20.0).reshape(4, 5)
        x[1:, ::2].add_(x[:-1, ::2])  # reads rows the write has changed: the full door copies
        t[1:, ::2].add_(t[:-1, ::2].clone())
        np.testing.assert_array_equal(x.numpy(), t.numpy())


def test_in_place_by_exact_layout_keeps_its_refusals():
    x = kael.ones(3, 4)
    for _ in range(2):
        with pytest.raises(kael.Error, match="doesn't match the broadcast shape"):
            x[:, :1].add_(kael.ones(3, 4))
        with pytest.raises(kael.TypeError, match="can't be cast"):
            kael.ones(3, 4, dtype=kael.int64)[:, ::2].add_(kael.ones(2) * 0.5)


@pytest.mark.parametrize("threads", [1, 2])
def test_pool_sized_calls_by_exact_layout_are_served_as_the_full_door_runs_them(threads):
    saved = kael.get_num_threads()
    kael.set_num_threads(threads)
    try:
        a, row = _tensor((700, 900), kael.float32, 66), _tensor((900,), kael.float32, 67)
        for _ in range(2):  # 7.5 MiB moved: the thread pool
            _same(a * row, _full(kael.mul, a, row))
            _same(a.T + 1.0, _full(kael.add, a.T, 1.0))
    finally:
        kael.set_num_threads(saved)


@pytest.mark.parametrize("exponent", [2, 2.0, 0.5, -0.5, -1, 3, 1.5, 0.0, -0.0, float("nan"), -2])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64])
@pytest.mark.parametrize("layout", ["dense", "strided"])
def test_pow_by_a_number_is_keyed_by_the_kernel_its_value_picks(exponent, dtype, layout):
    # x ** 2 is square, x ** 0.5 sqrt, x ** -1 reciprocal, other values pow: every value
    # that picks another kernel (or a refusal: int ** -2) has a key of its own
    def base(seed):
        x = _tensor((6, 8), dtype, seed).abs()
        return x if layout == "dense" else x[:, ::2]

    for seed in (70, 71, 72):
        x = base(seed)
        got = _try(lambda x=x: x**exponent)
        if isinstance(got, type):  # integers to negative powers, refused by torch too
            assert got is kael.ValueError
            with pytest.raises(RuntimeError, match="negative integer powers"):
                torch.from_numpy(x.numpy()) ** exponent
            continue
        want = torch.from_numpy(x.numpy()) ** exponent
        _same(got, _full(kael.pow, x, exponent))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_a_device_tensor_of_a_remembered_cpu_layout_is_never_served():
    # a strided CUDA tensor with a layout a CPU call made before must reach the full door,
    # not the CPU kernel (simulated: a cuda impl over host memory, which nothing reads)
    from kael.runtime.device import CUDA
    from kael.runtime.storage import Storage
    from kael.runtime.tensor_impl import TensorImpl

    a = kael.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    a.T.exp(), a.T.exp()
    assert fastpath.unary_key("exp", a.T) in fastpath._shaped
    storage = Storage.external(a._impl.storage.ptr, 24, a, device=CUDA)
    g = kael.Tensor.trusted(TensorImpl(storage, (3, 2), (1, 3), 0, kael.float32, CUDA))
    assert fastpath.unary("exp", g) is None
    assert fastpath.binary("add", g, 1.0) is None


@pytest.mark.parametrize("name", ["exp", "neg", "abs", "sigmoid", "absolute"])
def test_unary_functions_take_input_by_keyword(name):
    x = _tensor((4,), kael.float32, 80)
    fn = getattr(kael, name)
    _same(fn(input=x), fn(x))
    with pytest.raises(TypeError, match="'input'"):
        fn()


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_small_factory_of_a_known_size_is_one_remembered_launch(dtype):
    # zeros/ones/full by an int or bool: everything but the allocation worked out once;
    # by a float: not kept (-0.0 == 0.0 as a key), still right
    for _ in range(3):
        np.testing.assert_array_equal(kael.zeros(3, 5, dtype=dtype).numpy(), np.zeros((3, 5)))
        np.testing.assert_array_equal(kael.ones(7, dtype=dtype).numpy(), np.ones(7))
        assert kael.full((2, 2), -0.0, dtype=dtype).tolist() == [[-0.0] * 2] * 2
    assert ((3, 5), dtype, int, 0) in fastpath._filled
    assert not any(key[2] is float for key in fastpath._filled)
    big = kael.zeros(1200, 1000, dtype=dtype)  # past the inline size: never kept
    assert ((1200, 1000), dtype, int, 0) not in fastpath._filled
    assert not big.numpy().any()


def test_a_number_operands_word_is_kept_by_identity_only():
    # the last number's word is reused only for the same object and the same conversion:
    # -0.0 after 0.0, one float object by float32 then float64, an int then a bool
    x32, x64 = _tensor((5,), kael.float32, 90), _tensor((5,), kael.float64, 91)
    lr = 0.1
    for _ in range(3):
        for zero in (0.0, -0.0):
            got = x32 * zero
            assert np.array_equal(np.signbit(got.numpy()), np.signbit(x32.numpy() * zero))
        np.testing.assert_array_equal((x32 * lr).numpy(), x32.numpy() * np.float32(lr))
        np.testing.assert_array_equal((x64 * lr).numpy(), x64.numpy() * lr)
        ints = kael.tensor([1, 2, 3])
        assert (ints + 1).tolist() == [2, 3, 4]
        assert (ints + True).tolist() == [2, 3, 4]
        assert (ints * 2**62).tolist() == [2**62, -(2**63), 2**62 * 3 - 2**64]


@pytest.mark.parametrize("name", ["add", "mul", "div", "lt"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64])
def test_out_calls_into_dense_tensors_are_served_with_the_full_doors_bits(name, dtype):
    fn = getattr(kael, name)
    a, b = _tensor((5, 9), dtype, 80), _tensor((5, 9), dtype, 81)
    number = 2.5 if dtype.is_floating_point else 3
    for other in (b, number):
        want = _full(fn, a, other)
        out = kael.empty(want.shape, dtype=want.dtype)
        assert fn(a, other, out=out) is out  # the first call: the full door remembers it
        assert _served(fastpath._binary_parts(name, a, other)[0])
        out = kael.empty(want.shape, dtype=want.dtype)
        assert fastpath.binary_out(name, a, other, out) is out  # the fast door serves it
        _same(out, want)
        rows = kael.empty(20, 9, dtype=want.dtype)[3:8]  # dense, at an offset
        assert fn(a, other, out=rows) is rows
        _same(rows, want)


@pytest.mark.parametrize("name", ["exp", "neg", "sqrt"])
def test_unary_out_calls_are_served_and_may_write_over_their_input(name):
    fn = getattr(kael, name)
    x = _tensor((6, 7), kael.float64, 82).abs()
    want = _full(fn, x)
    out = kael.empty(6, 7, dtype=kael.float64)
    assert fn(x, out=out) is out
    assert fastpath.unary_out(name, x, out) is out
    _same(out, want)
    assert fn(x, out=x) is x  # the same elements read then written
    _same(x, want)


def test_out_calls_the_fast_door_cannot_serve_take_the_full_one():
    a = _tensor((6, 8), kael.float32, 83)
    kael.add(a, a, out=kael.empty(6, 8))
    t = torch.from_numpy(a.numpy())
    strided = kael.zeros(8, 6).T  # not dense: the full door's own layout
    kael.add(a, a, out=strided)
    np.testing.assert_array_equal(strided.numpy(), (t + t).numpy())
    with pytest.raises(kael.TypeError, match="float32 can't be cast to the desired output type"):
        kael.add(a, a, out=kael.empty(6, 8, dtype=kael.int64))
    wide = kael.add(a, a, out=kael.empty(6, 8, dtype=kael.float64))  # cast, as torch's
    np.testing.assert_array_equal(wide.numpy(), (t + t).double().numpy())
    got = resized_out(lambda o: kael.add(a, a, out=o), kael.empty(8, 6), tuple(a.shape))
    np.testing.assert_array_equal(got.numpy(), (t + t).numpy())
    with pytest.raises(kael.TypeError, match="out must be a Tensor, got list"):
        kael.add(a, a, out=[])
    # out over the input shifted by one element: the full door reads each element first
    base = kael.arange(10.0)
    want = _full(kael.add, base[1:], 1.0)
    kael.add(base[1:], 1.0, out=base[:-1])
    np.testing.assert_array_equal(base[:-1].numpy(), want.numpy())


def test_unary_out_calls_the_fast_door_cannot_serve_take_the_full_one():
    a = _tensor((6, 8), kael.float32, 84)
    kael.exp(a, out=kael.empty(6, 8))  # remembered: later calls ask the door first
    want = _full(kael.exp, a).numpy()
    strided = kael.zeros(8, 6).T
    assert kael.exp(a, out=strided) is strided
    np.testing.assert_array_equal(strided.numpy(), want)
    with pytest.raises(kael.TypeError, match="float32 can't be cast to the desired output type"):
        kael.exp(a, out=kael.empty(6, 8, dtype=kael.int64))
    wide = kael.exp(a, out=kael.empty(6, 8, dtype=kael.float64))  # cast, as torch's
    np.testing.assert_array_equal(wide.numpy(), want.astype(np.float64))
    got = resized_out(lambda o: kael.exp(a, out=o), kael.empty(8, 6), tuple(a.shape))
    np.testing.assert_array_equal(got.numpy(), want)
    base = kael.arange(10.0)  # out over the input shifted by one element
    want = _full(kael.exp, base[1:])
    kael.exp(base[1:], out=base[:-1])
    np.testing.assert_array_equal(base[:-1].numpy(), want.numpy())


@pytest.mark.parametrize("name", ["elu", "relu", "silu", "hardswish"])
def test_an_activation_refuses_out_even_after_the_door_has_served_it(name):
    # torch.nn.functional's activations take no out=: the door never serves one
    a = _tensor((4, 5), kael.float64, 85)
    fn = getattr(F, name)
    for _ in range(2):
        fn(a)
        with pytest.raises(TypeError, match="out"):
            fn(a, out=kael.empty(4, 5, dtype=kael.float64))


def test_an_out_call_over_its_own_operand_is_never_remembered():
    # The full door copies the transposed operand before writing over it, so the launch it
    # runs reads the copy's layout: remembered under the operands' layouts, a later a + a.T
    # would read a as if dense.
    data = np.arange(121, dtype=np.float32).reshape(11, 11)
    k = kael.tensor(data)
    kael.add(k, k.T, out=k)
    np.testing.assert_array_equal(k.numpy(), data + data.T)
    a = kael.tensor(data)
    assert not _served_shaped("add", a, a.T)
    for _ in range(2):
        np.testing.assert_array_equal((a + a.T).numpy(), data + data.T)


def test_parameters_take_the_fast_door_as_plain_tensors_do():
    weight = kael.nn.Parameter(kael.ones(3, 5, dtype=kael.float64))
    plain = kael.full((3, 5), 2.0, dtype=kael.float64)
    assert fastpath._binary_parts("sub", weight, plain) is not None
    for _ in range(2):  # the first call remembers, the second is served
        result = weight - plain
    assert _served(("sub", kael.float64, kael.float64, False))
    assert type(result) is kael.Tensor and result.tolist() == [[-1.0] * 5] * 3


def _formula_keys(name: tuple) -> list:
    return [k for k in fastpath._shaped if k[1] == "formula" and k[2] == name]


def test_a_formula_of_several_operands_is_remembered_by_exact_layouts():
    from kael.frontend import formula

    name = ("test", "fma3")
    a, b, c = kael.randn(4, 8), kael.randn(8, 4).t(), kael.randn(4, 8)
    expected = (a * b + c).numpy()
    for _ in range(3):  # the first call remembers; the others are served
        got = formula.launch(name, [a, b, c], kael.float32, lambda x, y, z: x * y + z)
        np.testing.assert_array_equal(got.numpy(), expected)
    assert len(_formula_keys(name)) == 1
    contiguous = b.contiguous()  # another layout: its own entry, the same values
    got = formula.launch(name, [a, contiguous, c], kael.float32, lambda x, y, z: x * y + z)
    np.testing.assert_array_equal(got.numpy(), expected)
    assert len(_formula_keys(name)) == 2


def test_a_formula_writing_over_an_operand_is_never_served_by_layouts():
    from kael.frontend import formula

    name = ("test", "overwrite")
    a, b = kael.ones(3, 3), kael.full((3, 3), 2.0)
    for _ in range(2):
        formula.launch(name, [a, b], kael.float32, lambda x, y: x + y, out=a._impl)
    assert _formula_keys(name) == [] and a.tolist() == [[5.0] * 3] * 3


COPY_DTYPES = [kael.float32, kael.float64, kael.float16, kael.int64, kael.int8, kael.bool]


@pytest.mark.parametrize("dtype", COPY_DTYPES, ids=str)
def test_clone_and_contiguous_through_the_copy_door_give_the_full_doors_bits(dtype):
    for shape in [(5, 3), (70,), (), (4, 2), (3, 0)]:
        x = _tensor(shape, dtype, 11)
        views = [x, x.T, x.flip(0) if x.ndim else x] + ([x[:, ::2], x.T[1:]] if x.ndim == 2 else [])
        for v in views:
            t = torch.from_numpy(v.numpy()).as_strided(v.shape, v.stride())
            for _ in range(3):  # the first call remembers, the next ones replay
                for method in ("clone", "contiguous"):
                    made = getattr(v, method)()
                    _same(made, _full(lambda u, m=method: getattr(u, m)(), v))
                    assert made.stride() == getattr(t, method)().stride()
                    assert (made is v) == (method == "contiguous" and v.is_contiguous())


def test_a_copy_keeps_every_nan_payload():
    bits = np.full((3, 2), 0x7F800001, dtype=np.uint32)  # a signalling NaN
    x = kael.from_numpy(bits.view(np.float32))
    for _ in range(3):
        assert (x.clone().numpy().view(np.uint32) == bits).all()
        assert (x.T.contiguous().numpy().view(np.uint32) == bits.T).all()


def test_a_clone_is_a_new_tensor_of_its_own():
    x = kael.arange(6.0).reshape(2, 3)
    for _ in range(3):
        y = x.clone()
        y[0, 0] = 9.0
        assert x[0, 0].item() == 0.0
    assert fastpath.copy(x) is not None  # the dense clone is served
    x.T.contiguous()
    assert fastpath.contiguous(x.T) is not None  # and the strided copy, once remembered


@pytest.mark.parametrize("src", COPY_DTYPES, ids=str)
@pytest.mark.parametrize("dst", [kael.float32, kael.int64, kael.float16, kael.bool], ids=str)
def test_copy_into_a_strided_destination_gives_the_full_doors_bits(src, dst):
    x = _tensor((4, 6), src, 13)
    for _ in range(3):  # the first call remembers the pair of layouts, the next replay
        out, full = kael.zeros(6, 8, dtype=dst), kael.zeros(6, 8, dtype=dst)
        out[1:5, ::2].T.copy_(x[:, :4].T)
        _full(lambda o, v: o[1:5, ::2].T.copy_(v), full, x[:, :4].T)
        _same(out, full)
        t = torch.zeros(6, 8, dtype=getattr(torch, str(dst)))
        t[1:5, ::2].T.copy_(torch.from_numpy(x.numpy())[:, :4].T.to(t.dtype))
        np.testing.assert_array_equal(out.numpy(), t.numpy())


def test_a_remembered_copy_between_overlapping_views_takes_the_full_door():
    a, b = kael.arange(8.0), kael.arange(8.0)
    for _ in range(2):
        a[:6].copy_(b[2:])  # two storages: remembered
    x, xt = kael.arange(8.0), torch.arange(8.0)
    x[:6].copy_(x[2:])  # the same layouts over one storage: read before written
    xt[:6].copy_(xt[2:].clone())
    assert x.tolist() == xt.tolist()


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_and_std_replay_their_two_launches_with_the_full_doors_bits(op):
    cases = [((4, 16), (-1,), {}), ((4, 16), (0,), {"keepdim": True}), ((5, 7), (), {}),
             ((3, 4, 5), ((0, 2),), {"correction": 0}), ((2000, 300), (), {})]  # fmt: skip
    for shape, args, kwargs in cases:
        for seed in range(3):  # the first call remembers both launches, the next replay them
            x = _tensor(shape, kael.float32, seed) + seed
            made = getattr(x, op)(*args, **kwargs)
            _same(made, _full(lambda t, a=args, k=kwargs: getattr(t, op)(*a, **k), x))
            want = getattr(torch.from_numpy(x.numpy()), op)(*args, **kwargs)
            np.testing.assert_allclose(made.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    chains = [
        v for k, v in fastpath._keyed.items() if k[0] == op and isinstance(v, fastpath._Steps)
    ]
    assert chains and all(len(c.steps) == 2 for c in chains)


def test_a_float64_variance_that_overflows_is_rescaled_after_remembered_calls():
    small = kael.tensor(np.random.default_rng(3).standard_normal((3, 4)))
    for _ in range(3):
        small.var(-1)
    huge = kael.tensor(np.array([[1e154, -1e154, 1e154, -1e154]] * 3))  # squares sum past max
    np.testing.assert_allclose(huge.var(-1).numpy(), np.full(3, 4 / 3 * 1e308), rtol=1e-12)


# ---- the keyed door over elementwise launches ------------------------------------------------


def _doubled_plus(x: kael.Tensor, y: kael.Tensor) -> kael.Tensor:
    """x * 2 + y in two formula launches (eager.run's, which a capture sees)."""
    from kael.frontend.formula import launch

    twice = launch(("test_twice",), [x], x.dtype, lambda a: a * 2.0)
    return launch(("test_plus",), [twice, y], x.dtype, lambda a, b: a + b)


def test_a_keyed_door_replays_a_chain_of_elementwise_launches(monkeypatch):
    monkeypatch.setattr(fastpath, "_keyed", {})
    door = fastpath.keyed(_doubled_plus, steps=2)
    x, y = _tensor((5, 7), kael.float32, 1), _tensor((7,), kael.float32, 2)
    door(x, y)
    [(key, kept)] = fastpath._keyed.items()
    assert type(kept) is fastpath._Steps and len(kept.steps) == 2
    for seed in range(3):
        x, y = _tensor((5, 7), kael.float32, seed), _tensor((7,), kael.float32, seed + 9)
        got, want = door(x, y), x.numpy() * 2 + y.numpy()
        np.testing.assert_array_equal(got.numpy(), want.astype(np.float32))


def test_a_keyed_door_never_keeps_an_elementwise_launch_into_its_own_operand(monkeypatch):
    """A launch writing in place into a tensor the call was given (a running statistic):
    a replay's fresh buffer would leave that tensor as it was."""
    from kael.frontend.formula import launch

    def add_into(x: kael.Tensor, total: kael.Tensor) -> kael.Tensor:
        launch(("test_add_into",), [total, x], x.dtype, lambda a, b: a + b, out=total._impl)
        return launch(("test_twice",), [x], x.dtype, lambda a: a * 2.0)

    monkeypatch.setattr(fastpath, "_keyed", {})
    door = fastpath.keyed(add_into, steps=2)
    x, total = _tensor((4,), kael.float64, 3), kael.zeros(4, dtype=kael.float64)
    for _ in range(3):
        door(x, total)
    assert list(fastpath._keyed.values()) == [fastpath._UNSERVED]
    np.testing.assert_array_equal(total.numpy(), 3 * x.numpy())


def test_a_fast_door_launch_inside_a_capture_leaves_nothing_kept(monkeypatch):
    """The fast elementwise door's launches are not captured: a call making one (here the
    result's in-place + 1) would replay without it, so its door keeps nothing."""
    from kael.frontend.formula import launch

    def doubled_then_one(x: kael.Tensor) -> kael.Tensor:
        twice = launch(("test_twice",), [x], x.dtype, lambda a: a * 2.0)
        return twice.add_(1.0)

    monkeypatch.setattr(fastpath, "_keyed", {})
    door = fastpath.keyed(doubled_then_one, steps=2)
    x = _tensor((6,), kael.float32, 4)
    for _ in range(2):  # the second call's add_ takes the fast door the first remembered
        door(x)
    monkeypatch.setattr(fastpath, "_keyed", {})
    first = door(x)
    assert list(fastpath._keyed.values()) == [fastpath._UNSERVED]
    for _ in range(2):
        np.testing.assert_array_equal(door(x).numpy(), first.numpy())
    np.testing.assert_array_equal(first.numpy(), (x.numpy() * 2 + 1).astype(np.float32))


def test_a_keyed_door_keys_which_tensor_arguments_are_one_tensor(monkeypatch):
    """A capture maps each read to the first argument at its place: a first call passing
    one tensor twice must not serve calls passing two (nor the reverse)."""
    monkeypatch.setattr(fastpath, "_keyed", {})
    door = fastpath.keyed(_doubled_plus, steps=2)
    x, y = _tensor((5, 7), kael.float32, 1), _tensor((5, 7), kael.float32, 2)
    door(x, x)
    for a, b in ((x, y), (y, x), (y, y), (x, y)):
        want = (a.numpy() * 2 + b.numpy()).astype(np.float32)
        np.testing.assert_array_equal(door(a, b).numpy(), want)
    assert len(fastpath._keyed) == 2  # (x, x) and (x, y) place patterns


def test_a_keyed_door_never_keeps_a_result_larger_than_what_its_launches_wrote(monkeypatch):
    """A result viewing more of a storage than the captured launch wrote (the rest filled
    by a door no capture sees) is not kept: a replay would allocate only the written part."""
    from kael.frontend.formula import launch

    def prefix_of_zeros(x: kael.Tensor) -> kael.Tensor:
        z = kael.zeros(8)
        launch(("test_twice",), [x], x.dtype, lambda a: a * 2.0, out=z[:4]._impl)
        return z

    for _ in range(3):
        kael.zeros(8)  # the fill door remembers zeros(8)
    monkeypatch.setattr(fastpath, "_keyed", {})
    door = fastpath.keyed(prefix_of_zeros)
    x = kael.tensor(np.arange(4, dtype=np.float32))
    for _ in range(3):
        np.testing.assert_array_equal(door(x).numpy(), [0, 2, 4, 6, 0, 0, 0, 0])
    assert list(fastpath._keyed.values()) == [fastpath._UNSERVED]


def test_functional_relu_and_silu_ask_the_fast_door_before_their_op_door(monkeypatch):
    """F.relu(x) and F.silu(x) are unary ops with torch's inplace=: a call with the tensor
    alone is served without entering the op door (which a profiler's hook here refuses);
    inplace=True is the full door's."""
    from kael.frontend import tracing

    class Refusing:
        def op(self, name, fn, args, kwargs):
            raise AssertionError(f"{name} entered its op door")

    x = _tensor((5, 3), kael.float32, 6)
    y = x.clone()
    assert F.relu(y, inplace=True) is y
    np.testing.assert_array_equal(y.numpy(), np.maximum(x.numpy(), 0))
    for fn in (F.relu, F.silu):
        fn(x)  # the full door remembers the launch
    monkeypatch.setattr(tracing.profiling, "active", Refusing())
    np.testing.assert_array_equal(F.relu(x).numpy(), np.maximum(x.numpy(), 0))
    assert F.silu(x).shape == x.shape
    with pytest.raises(AssertionError, match="relu entered its op door"):
        F.relu(x, inplace=False)


@pytest.mark.parametrize(
    "op",
    [
        lambda L, x, k: x.sum(k),
        lambda L, x, k: x.topk(k + 1).values,
        lambda L, x, k: x.cumsum(k),
        lambda L, x, k: x.argmax(k),
        lambda L, x, k: x.index_select(k, L.tensor([0])),
    ],
    ids=["sum", "topk", "cumsum", "argmax", "index_select"],
)
def test_a_zero_dim_integer_tensor_read_as_an_int_is_read_at_each_call(op):
    """A fast door keys tensors by layout: a 0-d integer tensor given as a dim or a k is
    an int whose value the key would miss, so the full door takes it each time."""
    import torch

    for k in (0, 1, 0, 1):
        got = op(kael, kael.arange(6.0).reshape(2, 3), kael.tensor(k))
        want = op(torch, torch.arange(6.0).reshape(2, 3), torch.tensor(k))
        assert got.tolist() == want.tolist()
