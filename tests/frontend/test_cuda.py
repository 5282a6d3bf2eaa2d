"""kael on a CUDA device against the same ops on the CPU: run by `python -m kael.check_gpu`
(or `pytest -m gpu`) on a machine with a GPU, skipped with the probe's reason elsewhere."""

import re

import numpy as np
import pytest

import kael
from kael.codegen.cpu import rank
from kael.frontend import index_ops

pytestmark = pytest.mark.gpu

DEVICE = "cuda"
FLOATS = [kael.float32, kael.float64]
NP = {kael.float32: np.float32, kael.float64: np.float64, kael.int64: np.int64, kael.bool: bool}


def _host(shape, dtype, seed: int = 0) -> kael.Tensor:
    rng = np.random.default_rng(seed)
    if dtype is kael.bool:
        values = rng.random(shape) < 0.5
    elif dtype is kael.int64:
        values = rng.integers(-1000, 1000, shape)
    else:
        values = rng.standard_normal(shape)
    return kael.tensor(np.asarray(values).astype(NP[dtype]))


def _bits(t: kael.Tensor) -> np.ndarray:
    return t.cpu().numpy()


def _same_bits(got: kael.Tensor, want: kael.Tensor) -> None:
    assert str(got.device) == "cuda:0" and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(_bits(got), _bits(want))


def _close(got: kael.Tensor, want: kael.Tensor, rtol: float) -> None:
    assert str(got.device) == "cuda:0" and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(_bits(got), _bits(want), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", list(NP), ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 5), (1 << 20,)], ids=str)
def test_a_tensor_goes_to_the_device_and_back_bit_for_bit(dtype, shape):
    host = _host(shape, dtype)
    on_device = host.to(DEVICE)
    assert str(on_device.device) == "cuda:0" and on_device.dtype == dtype
    _same_bits(on_device, host.to(DEVICE))
    np.testing.assert_array_equal(on_device.cpu().numpy(), host.numpy())


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_correctly_rounded_binary_ops_give_the_cpus_bits(op, dtype):
    # IEEE add, sub, mul, div and max round the same on both: the same bits
    a, b = _host((1000, 37), dtype, 1), _host((1000, 37), dtype, 2)
    fn = getattr(kael, op)
    _same_bits(fn(a.to(DEVICE), b.to(DEVICE)), fn(a, b))


@pytest.mark.parametrize("op", ["exp", "log", "tanh", "sin", "sqrt", "sigmoid"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_vector_math_on_the_device_agrees_with_the_cpu(op, dtype):
    a = _host((4096,), dtype, 3).abs() + 0.5
    fn = getattr(kael, op)
    _close(fn(a.to(DEVICE)), fn(a), 4e-7 if dtype is kael.float32 else 1e-15)


@pytest.mark.parametrize("op", ["remainder", "floor_divide"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_float_remainder_on_the_device_is_exact_as_the_cpus(dtype, op):
    # NVPTX's own frem is a - trunc(a / b) * b: wrong for large quotients and inf % inf
    rng = np.random.default_rng(34)
    a = rng.standard_normal(500) * 10.0 ** rng.integers(-30, 30, 500)
    b = rng.standard_normal(500) * 10.0 ** rng.integers(-30, 30, 500)
    special = [np.inf, -np.inf, np.nan, 0.0, -0.0, 5.0, -5.0, 3.0]
    a = np.concatenate([a, np.repeat(special, len(special))])
    b = np.concatenate([b, np.tile(special, len(special))])
    x, y = kael.tensor(a).to(dtype), kael.tensor(b).to(dtype)
    fn = getattr(kael, op)
    _same_bits(fn(x.to(DEVICE), y.to(DEVICE)), fn(x, y))
    got, want = _bits(fn(x.to(DEVICE), y.to(DEVICE))), _bits(fn(x, y))
    numbers = ~np.isnan(want)  # zeros' signs too (a NaN's sign means nothing)
    np.testing.assert_array_equal(np.signbit(got)[numbers], np.signbit(want)[numbers])


def test_broadcast_and_transposed_operands_on_the_device():
    a, row = _host((300, 200), kael.float32, 4), _host((200,), kael.float32, 5)
    want = a.T * 2.0 + row[:, None]
    _same_bits(a.to(DEVICE).T * 2.0 + row.to(DEVICE)[:, None], want)


def test_a_fused_chain_over_many_blocks_reaches_every_element():
    n = (1 << 24) + 3  # more elements than one grid of blocks covers in one pass
    a = kael.arange(n, dtype=kael.float32)
    got = (a.to(DEVICE) * 0.5 + 1.0).cpu().numpy()
    np.testing.assert_array_equal(got, (a * 0.5 + 1.0).numpy())


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64], ids=str)
@pytest.mark.parametrize("op", ["sum", "amax", "amin", "argmax"])
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_reductions_on_the_device_agree_with_the_cpu(dtype, op, dim):
    a = _host((513, 1031), dtype, 6)
    fn = getattr(kael, op)
    got = fn(a.to(DEVICE)) if dim is None else fn(a.to(DEVICE), dim)
    want = fn(a) if dim is None else fn(a, dim)
    _same_bits(got, want)  # float sums too: the host's blocks and order (ptx/reduce.py)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_a_sum_over_many_blocks_gives_the_cpus_bits(dtype):
    # the same fixed blocks, lanes, float32 runs and combining tree on both devices
    a = kael.tensor(np.random.default_rng(7).standard_normal(1 << 18) * 1e3).to(dtype)
    _same_bits(a.to(DEVICE).sum(), a.sum())


@pytest.mark.parametrize("op", ["sum", "mean", "var", "std", "norm", "prod"])
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 2)], ids=str)
def test_float64_accumulations_give_the_cpus_bits(op, dim):
    # float64 data whose sums round at every step: only the same order gives the same bits
    a = kael.tensor(np.random.default_rng(8).standard_normal((9, 40, 70)) * 1e3)
    if op == "prod":
        a = a / 1e3 * 0.05 + 1.0
    fn = getattr(kael, op)
    on_device = a.to(DEVICE)
    for x, y in ((a, on_device), (a.transpose(0, 2), on_device.transpose(0, 2))):
        # contiguous and transposed: the host's ROWS and COLS schedules, strided lanes
        got = fn(y) if dim is None else fn(y, dim=dim)
        want = fn(x) if dim is None else fn(x, dim=dim)
        _same_bits(got, want)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", [(64, 64, 64), (257, 129, 65), (1, 1000, 1)], ids=str)
def test_matmul_on_the_device_agrees_with_the_cpu(dtype, shape):
    m, k, n = shape
    a, b = _host((m, k), dtype, 8), _host((k, n), dtype, 9)
    _close(a.to(DEVICE) @ b.to(DEVICE), a @ b, 1e-4 if dtype is kael.float32 else 1e-12)


def test_softmax_on_the_device_agrees_with_the_cpu():
    a = _host((64, 1000), kael.float32, 10)
    _close(kael.softmax(a.to(DEVICE), -1), kael.softmax(a, -1), 1e-6)


@pytest.mark.parametrize("affine", ["none", "weight", "both"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_layer_norm_on_the_device_agrees_with_the_cpu(dtype, affine):
    x = _host((6, 5, 40), dtype, 12) * 3.0 + 1.0
    params = [
        _host((5, 40), dtype, 13 + i) for i in range({"none": 0, "weight": 1, "both": 2}[affine])
    ]
    want = kael.nn.functional.layer_norm(x, (5, 40), *params)
    got = kael.nn.functional.layer_norm(x.to(DEVICE), (5, 40), *[p.to(DEVICE) for p in params])
    _close(got, want, 2e-6 if dtype is kael.float32 else 1e-14)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("shape", [(6, 5), (5,), (4, 5, 3)], ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_cross_entropy_on_the_device_agrees_with_the_cpu(dtype, shape, weighted, reduction):
    x = _host(shape, dtype, 16) * 3.0
    classes = shape[0] if len(shape) == 1 else shape[1]
    target = kael.tensor(np.random.default_rng(17).integers(0, classes, (shape[0], *shape[2:])))
    if len(shape) == 1:
        target = target[0]
    else:
        target.view(-1)[0] = -100  # ignored
    w = _host((classes,), dtype, 18).abs() if weighted else None
    F = kael.nn.functional
    want = F.cross_entropy(x, target, w, reduction=reduction)
    on_device = w.to(DEVICE) if weighted else None
    got = F.cross_entropy(x.to(DEVICE), target.to(DEVICE), on_device, reduction=reduction)
    _close(got, want, 1e-6 if dtype is kael.float32 else 1e-14)


def test_cross_entropy_on_the_device_names_an_out_of_range_target():
    x, target = _host((3, 4), kael.float32, 19).to(DEVICE), kael.tensor([0, 7, 1]).to(DEVICE)
    with pytest.raises(kael.IndexError, match=r"Target 7 is out of bounds.*flat position 1"):
        kael.nn.functional.cross_entropy(x, target)


INDEX_DTYPES = [kael.float32, kael.float64, kael.int64, kael.bool]


@pytest.mark.parametrize("dtype", INDEX_DTYPES, ids=str)
def test_gather_index_select_and_take_along_dim_on_the_device_agree_with_the_cpu(dtype):
    src = _host((7, 9), dtype, 20)
    index = kael.tensor(np.random.default_rng(21).integers(0, 7, (5, 9)))
    rows = kael.tensor([6, 0, 3, 3])
    on = (src.to(DEVICE), index.to(DEVICE), rows.to(DEVICE))
    _same_bits(kael.gather(on[0], 0, on[1]), kael.gather(src, 0, index))
    _same_bits(kael.gather(on[0].T, 1, on[1][:, :7]), kael.gather(src.T, 1, index[:, :7]))
    _same_bits(kael.index_select(on[0], 0, on[2]), kael.index_select(src, 0, rows))
    _same_bits(kael.index_select(on[0], 1, on[2]), kael.index_select(src, 1, rows))
    wrapped = index - 7  # take_along_dim wraps indices modulo the size
    _same_bits(
        kael.take_along_dim(on[0], wrapped.to(DEVICE), 0), kael.take_along_dim(src, wrapped, 0)
    )


def test_gather_on_the_device_names_a_bad_index_and_its_dim():
    src, index = _host((3, 4), kael.float32, 22).to(DEVICE), kael.tensor([[0, 5]]).to(DEVICE)
    with pytest.raises(kael.IndexError, match=r"5.*out of bounds.*dimension 1.*size 4"):
        kael.gather(src, 1, index)


def _scatter_adds(dtype, check) -> list[str]:
    """scatter_add_ and index_add_ on the device against the CPU, compared by `check`; the
    symbols of the launches the device ran."""
    from kael.frontend.inspection import record_launches

    src = _host((6, 5), dtype, 23)
    index = kael.tensor(np.random.default_rng(24).integers(0, 3, (6, 5)))
    want = kael.zeros(3, 5, dtype=dtype).scatter_add_(0, index, src)
    got, launches = record_launches(
        lambda a, i, s: a.scatter_add_(0, i, s),
        kael.zeros(3, 5, dtype=dtype).to(DEVICE), index.to(DEVICE), src.to(DEVICE),
    )  # fmt: skip
    check(got, want)
    want = kael.zeros(6, 4, dtype=dtype).index_add_(1, kael.tensor([3, 0, 3, 1, 0]), src)
    got = kael.zeros(6, 4, dtype=dtype).to(DEVICE)
    got.index_add_(1, kael.tensor([3, 0, 3, 1, 0]).to(DEVICE), src.to(DEVICE))
    check(got, want)
    return [launch.symbol for launch in launches if launch.kind == "kernel"]


@pytest.mark.parametrize("dtype", [kael.float64, kael.int64], ids=str)
def test_scatter_add_on_the_device_adds_atomically_and_matches_the_cpu(dtype):
    exact = dtype is kael.int64  # float sums round in the order the atomics land
    symbols = _scatter_adds(dtype, _same_bits if exact else lambda g, w: _close(g, w, 1e-12))
    assert symbols == [f"kael_scatter_atomic_{dtype.name}"] * 2  # the check, then the adds


@pytest.mark.parametrize("dtype", [kael.float64, kael.bool], ids=str)
def test_deterministic_scatter_add_on_the_device_has_the_cpus_bits(dtype):
    """Deterministic algorithms (and dtypes without an atomic add) walk lines in index order."""
    kael.use_deterministic_algorithms(dtype is kael.float64)
    try:
        symbols = _scatter_adds(dtype, _same_bits)
    finally:
        kael.use_deterministic_algorithms(False)
    assert symbols == [f"kael_scatter_add_{dtype.name}"] * 2


def test_a_long_atomic_scatter_add_on_the_device_matches_the_cpu():
    index = kael.tensor(np.random.default_rng(26).integers(0, 7, 5000))
    src = _host((5000,), kael.float32, 27)
    want = kael.zeros(7).scatter_add_(0, index, src)
    _close(kael.zeros(7).to(DEVICE).scatter_add_(0, index.to(DEVICE), src.to(DEVICE)), want, 1e-4)


def test_a_bad_scatter_index_on_the_device_leaves_self_unchanged():
    self_ = kael.zeros(2, 3).to(DEVICE)
    with pytest.raises(kael.IndexError, match="out of bounds"):
        self_.scatter_add_(0, kael.tensor([[0, 2, 1]]).to(DEVICE), kael.ones(1, 3).to(DEVICE))
    assert self_.cpu().numpy().tolist() == [[0.0] * 3] * 2


@pytest.mark.parametrize("shape", [(), (0,), (13,), (5, 7), (3, 0, 2), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("dtype", [kael.float32, kael.bool, kael.int64], ids=str)
def test_nonzero_on_the_device_lists_the_cpus_coordinates(dtype, shape):
    x = _host(shape, kael.float32, 25)
    x = (x > 0.3).to(dtype) if dtype is not kael.float32 else x * (x > 0.3).to(kael.float32)
    got = kael.nonzero(x.to(DEVICE))
    _same_bits(got, kael.nonzero(x))


def test_nonzero_over_many_blocks_on_the_device_keeps_row_major_order():
    x = (kael.arange(3 * 5000) % 7 == 0).view(3, 5000)  # spans several nonzero work items
    _same_bits(kael.nonzero(x.to(DEVICE)), kael.nonzero(x))


def _keys(on_device: bool):
    to = (lambda t: t.to(DEVICE)) if on_device else (lambda t: t)
    idx, mask = kael.tensor([4, -1, 0, 4]), kael.arange(6) % 2 == 0
    return [
        to(idx), (slice(1, 3), to(idx)), (to(idx), slice(None, None, 2)), [2, 0],
        to(mask), (to(mask), 1), (Ellipsis, to(kael.tensor([[1, 0], [2, 2]]))),
        (to(idx), to(kael.tensor([0, 1, 2, 3]))), idx,  # a CPU index into a cuda tensor
    ]  # fmt: skip


@pytest.mark.parametrize("k", range(9))
def test_advanced_indexing_on_the_device_gathers_and_puts_as_the_cpu(k):
    x = _host((6, 5), kael.float32, 26)
    host_key, device_key = _keys(False)[k], _keys(True)[k]
    _same_bits(x.to(DEVICE)[device_key], x[host_key])
    want, got = x.clone(), x.to(DEVICE)
    want[host_key] = 7.5
    got[device_key] = 7.5
    _same_bits(got, want)
    value = _host(x[host_key].shape, kael.float32, 27)
    want[host_key] = value
    got[device_key] = value.to(DEVICE)
    _same_bits(got, want)


def test_advanced_indexing_on_the_device_names_a_bad_index():
    x = _host((3, 4), kael.float32, 28).to(DEVICE)
    with pytest.raises(
        kael.IndexError, match="index 9 is out of bounds for dimension 1 with size 4"
    ):
        x[:, kael.tensor([0, 9]).to(DEVICE)]


def _ties_and_nans(dtype, shape, seed):
    x = _host(shape, kael.float64, seed).mul(2.0).round()  # ties
    if dtype.is_floating_point:
        x.view(-1)[::7] = float("nan")
    return (x > 0) if dtype is kael.bool else x.to(dtype)


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", INDEX_DTYPES, ids=str)
def test_sort_and_argsort_on_the_device_give_the_cpus_stable_order(dtype, dim, descending):
    x = _ties_and_nans(dtype, (6, 5, 9), 29)
    values, indices = kael.sort(x.to(DEVICE), dim, descending)
    want_values, want_indices = kael.sort(x, dim, descending)
    _same_bits(indices, want_indices)
    _same_bits(values, want_values)
    _same_bits(kael.argsort(x.to(DEVICE), dim, descending), want_indices)


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize("dtype", INDEX_DTYPES, ids=str)
def test_radix_sort_on_the_device_gives_the_cpus_stable_order(dtype, descending):
    n = max(rank.RANK_ROW, index_ops.RADIX_KEYS_A_BYTE * dtype.itemsize) + 9
    assert index_ops._sort_kernel(dtype, n) == "radix"
    x = _ties_and_nans(dtype, (3, n), 31)
    values, indices = kael.sort(x.to(DEVICE), 1, descending)
    want_values, want_indices = kael.sort(x, 1, descending)
    _same_bits(indices, want_indices)
    _same_bits(values, want_values)


@pytest.mark.parametrize("dtype", [kael.float32, kael.int64], ids=str)
def test_radix_selection_on_the_device_gives_the_cpus_medians_and_kthvalues(dtype):
    x = _ties_and_nans(dtype, (3, 140), 33)  # rows radix selection takes
    assert index_ops.selects(dtype, 140)
    for got, want in ((kael.median(x.to(DEVICE), 1), kael.median(x, 1)),
                      (kael.kthvalue(x.to(DEVICE), 100, 1), kael.kthvalue(x, 100, 1))):  # fmt: skip
        _same_bits(got.values, want.values)
        _same_bits(got.indices, want.indices)


@pytest.mark.parametrize("heap_rows", [2, 1 << 20], ids=["heap", "radix"])
@pytest.mark.parametrize("n, k", [(130, 9), (130, 40), (31, 17), (31, 3)])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_on_the_device_gives_the_cpus(monkeypatch, largest, n, k, heap_rows):
    # the heap kernel where the rows are "many"; else radix selection (short rows: the heap)
    monkeypatch.setattr(index_ops, "DEVICE_HEAP_ROWS", heap_rows)
    x = _ties_and_nans(kael.float32, (2, n), 34)
    values, indices = kael.topk(x.to(DEVICE), k, 1, largest)
    want_values, want_indices = kael.topk(x, k, 1, largest)
    _same_bits(values, want_values)
    _same_bits(indices, want_indices)


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_unique_on_the_device_gives_the_cpus_values_inverse_and_counts(dim):
    x = _host((40, 3), kael.float64, 32).mul(1.5).round()  # repeated rows and values
    got = kael.unique(x.to(DEVICE), dim=dim, return_inverse=True, return_counts=True)
    want = kael.unique(x, dim=dim, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        _same_bits(g, w)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16, kael.int16, kael.uint8], ids=str)
def test_topk_of_narrow_keys_on_the_device_gives_the_cpus(dtype, largest):
    # the heap's worst-of-the-tail loop becomes packed max.u16x2 for 16-bit keys
    x = _ties_and_nans(dtype, (4, 17), 31)
    values, indices = kael.topk(x.to(DEVICE), 5, 1, largest)
    want_values, want_indices = kael.topk(x, 5, 1, largest)
    _same_bits(indices, want_indices)
    as_bits = kael.int16 if dtype is kael.bfloat16 else dtype  # NumPy has no bfloat16
    _same_bits(values.view(as_bits), want_values.view(as_bits))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 5, 17])
@pytest.mark.parametrize("dtype", [kael.float32, kael.int64], ids=str)
def test_topk_on_the_device_agrees_with_the_cpu(dtype, k, largest):
    x = _host((4, 17), dtype, 30)  # distinct values: no tie at the k-th place
    values, indices = kael.topk(x.to(DEVICE), k, 1, largest)
    want_values, want_indices = kael.topk(x, k, 1, largest)
    _same_bits(indices, want_indices)
    _same_bits(values, want_values)


def test_sort_of_a_0d_and_an_empty_tensor_on_the_device():
    _same_bits(kael.sort(kael.tensor(3.0).to(DEVICE))[1], kael.sort(kael.tensor(3.0))[1])
    _same_bits(kael.sort(kael.ones(3, 0).to(DEVICE), 0)[0], kael.sort(kael.ones(3, 0), 0)[0])


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", INDEX_DTYPES, ids=str)
def test_scans_run_on_the_device_and_give_the_cpus_bits(dtype, op):
    x = _host((6, 40, 5), dtype, 31)
    fn = getattr(kael, op)
    for dim in range(3):
        _same_bits(fn(x.to(DEVICE), dim), fn(x, dim))
    _same_bits(fn(x.to(DEVICE).transpose(0, 2), 1), fn(x.transpose(0, 2), 1))
    long = _host((2, 3000), dtype, 32)  # rows long enough for the column kernel
    _same_bits(fn(long.to(DEVICE), 1), fn(long, 1))


def test_logcumsumexp_over_an_outer_dim_on_the_device_matches_the_cpu():
    x = _host((40, 64), kael.float32, 34)  # the CPU's vector `columns` kernel
    _close(kael.logcumsumexp(x.to(DEVICE), 0), kael.logcumsumexp(x, 0), 1e-6)


def test_complex_logcumsumexp_on_the_device_gives_the_cpus_bits():
    rng = np.random.default_rng(35)
    for dtype in (kael.complex64, kael.complex128):
        parts = rng.standard_normal((2, 7, 50)) * 3
        x = kael.tensor(parts[0] + 1j * parts[1]).to(dtype)
        for dim in (0, 1):
            _same_bits(kael.logcumsumexp(x.to(DEVICE), dim), kael.logcumsumexp(x, dim))


def test_a_long_scan_on_the_device_runs_the_block_scan():
    """2 blocks and 5 elements: a work item per block on the device, where the CPU, with
    one line, scans it whole; int64 sums agree exactly, float64 to rounding."""
    from kael.codegen.cpu import scan
    from kael.frontend.inspection import record_launches

    for dtype in (kael.int64, kael.float64):
        x = _host((2 * scan.BLOCK + 5,), dtype, 33)
        got, launches = record_launches(lambda a: kael.cumsum(a, 0), x.to(DEVICE))
        kernels = [launch for launch in launches if launch.kind == "kernel"]
        assert [launch.symbol.rsplit("_", 1)[-1] for launch in kernels] == [
            "totals", "carries", "blocks"
        ]  # fmt: skip
        check = _same_bits if dtype is kael.int64 else lambda g, w: _close(g, w, 1e-12)
        check(got, kael.cumsum(x, 0))


SAMPLERS = {
    "rand": lambda device: kael.rand(257, device=device),
    "randn": lambda device: kael.randn(3, 50, device=device),
    "randint": lambda device: kael.randint(-5, 10, (99,), device=device),
    "randperm": lambda device: kael.randperm(40, device=device),
    "bernoulli": lambda device: kael.bernoulli(kael.full((70,), 0.3, device=device)),
    "_standard_gamma": lambda device: kael._standard_gamma(
        kael.tensor([0.2, 1.0, 3.5, 0.0], device=device)
    ),
    "_sample_dirichlet": lambda device: kael._sample_dirichlet(
        kael.tensor([[0.5, 2.0, 1.0]], dtype=kael.float64, device=device)
    ),
}


@pytest.mark.parametrize("sampler", list(SAMPLERS))
def test_random_values_on_the_device_are_the_cpus_and_advance_the_generator_alike(sampler):
    kael.manual_seed(7)
    want, after_cpu = SAMPLERS[sampler]("cpu"), kael.rand(3)
    kael.manual_seed(7)
    got, after_device = SAMPLERS[sampler](DEVICE), kael.rand(3)
    _same_bits(got, want)
    np.testing.assert_array_equal(after_device.numpy(), after_cpu.numpy())


@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_on_the_device_draws_the_cpus_samples_from_one_seed(replacement):
    weights = _host((4, 7), kael.float32, 33).abs() + 0.1
    kael.manual_seed(5)
    want = kael.multinomial(weights, 5, replacement)
    kael.manual_seed(5)
    got = kael.multinomial(weights.to(DEVICE), 5, replacement)
    _same_bits(got, want)


def test_multinomial_on_the_device_names_a_bad_weight():
    with pytest.raises(kael.ValueError, match=r"got -1.0 at position \[0, 1\]"):
        kael.multinomial(kael.tensor([[1.0, -1.0]]).to(DEVICE), 1)


def _softmax(x):
    e = (x - x.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


def _dense_relu(x, w, b):
    return kael.nn.functional.relu(x @ w + b)


def _bump(x):
    x.add_(1.0)
    return x * 2.0 + kael.rand(x.shape, device=x.device)


@pytest.mark.parametrize("fn", [_softmax, _dense_relu, _bump], ids=lambda f: f.__name__)
def test_a_compiled_function_on_the_device_gives_eagers_cpu_results(fn):
    shapes = {_softmax: [(8, 33)], _dense_relu: [(8, 16), (16, 4), (4,)], _bump: [(5, 3)]}[fn]
    args = [_host(shape, kael.float32, 35 + i) for i, shape in enumerate(shapes)]
    kael.manual_seed(3)
    want = fn(*[a.clone() for a in args])
    compiled = kael.compile(fn)
    on_device = [a.to(DEVICE) for a in args]
    kael.manual_seed(3)
    got = compiled(*on_device)
    _close(got, want, 1e-6)
    if fn is _bump:  # the caller sees the in-place update, on the device
        _close(on_device[0], args[0] + 1.0, 0.0)


def test_a_compiled_functions_kernels_on_the_device_show_their_ptx():
    text = str(
        kael.compile(_softmax).inspect(_host((4, 8), kael.float32, 38).to(DEVICE), stages=("ptx",))
    )
    assert text.count(".visible .entry") >= 3 and "cuda:0" in text


def test_layer_norm_with_a_weight_on_another_device_raises_naming_both():
    x, w = _host((2, 8), kael.float32, 14), _host((8,), kael.float32, 15)
    with pytest.raises(kael.Error, match=r"cuda:0 and cpu"):
        kael.nn.functional.layer_norm(x.to(DEVICE), (8,), w)


def test_mixed_devices_raise_naming_both():
    with pytest.raises(kael.Error, match=r"cpu.*cuda:0|cuda:0.*cpu"):
        kael.ones(3) + kael.ones(3, device=DEVICE)


def test_an_index_op_with_its_index_on_the_host_raises_naming_both_devices():
    a = _host((4, 8), kael.float32, 11).to(DEVICE)
    with pytest.raises(kael.Error, match=r"gather\(\): .*one device, but found cuda:0 and cpu"):
        kael.gather(a, 1, kael.zeros(4, 2, dtype=kael.int64))


@pytest.fixture
def small_device(monkeypatch):
    """The emulated device shrunk to what it holds plus `room` bytes (a GPU's cannot be)."""
    from kael.runtime import cuda_driver

    if not cuda_driver.emulated():
        pytest.skip("shrinks the emulated device's memory (KAEL_EMULATE_CUDA=1)")
    from kael.runtime.emulator import driver, memory

    def shrink(room: int) -> None:
        kael.empty_cache()  # no cached block serves what the test asks for
        monkeypatch.setattr(memory, "TOTAL_BYTES", driver._memory.in_use + room)

    return shrink


def test_more_than_the_device_holds_is_refused_naming_the_bytes():
    # on a GPU too: three times its memory cannot be had even after the cache is freed
    from kael.runtime import cuda_driver

    asked = 3 * cuda_driver.describe()["memory"] // 4 * 4  # short of its bucket
    with pytest.raises(kael.OutOfMemoryError, match=r"free of \d+") as refused:
        kael.empty(asked // 4, dtype=kael.float32, device=DEVICE)
    # the bytes named: what was asked (the power-of-two bucket and a block of the request's
    # own 2 MiB steps were tried first, the cache freed), not a block size
    named = int(re.search(r"cannot allocate (\d+) bytes", str(refused.value)).group(1))
    assert named == asked and kael.cuda.OutOfMemoryError is kael.OutOfMemoryError
    assert (kael.ones(8, device=DEVICE) + 1).sum().item() == 16.0  # the device still works


def test_a_tensor_its_power_of_two_block_does_not_fit_takes_its_own_bytes(small_device):
    # 7 MiB free: a 4.5 MiB tensor's bucket (8 MiB) does not fit, so it gets a block of
    # its own 6 MiB (2 MiB steps), given back to the device, not cached, when released
    small_device(7 << 20)
    before = kael.memory_stats("cuda")["reserved_bytes"]
    x = kael.full((9 << 17,), 2.0, device=DEVICE)  # 4.5 MiB of float32
    assert kael.memory_stats("cuda")["reserved_bytes"] == before + (6 << 20)
    assert x.sum().item() == 2 * (9 << 17)
    del x
    stats = kael.memory_stats("cuda")
    assert stats["reserved_bytes"] - stats["cached_bytes"] <= before


def test_out_of_device_memory_names_the_bytes_asked_for_and_free(small_device):
    small_device(3 << 20)
    held = kael.ones(1 << 18, device=DEVICE)  # 1 MiB in use
    cached = kael.ones(1 << 19, device=DEVICE)
    del cached  # 2 MiB cached: freed before the last try, so it counts as free
    asked = 3 << 20
    with pytest.raises(kael.OutOfMemoryError) as refused:
        kael.empty(asked // 4, device=DEVICE)
    free = kael.cuda.mem_get_info()[0]
    message = str(refused.value)
    assert message.startswith(f"CUDA out of memory: cannot allocate {asked} bytes (0.00 GiB);")
    assert f"the device has {free} bytes" in message and free == 2 << 20
    assert f"kael's tensors hold {kael.cuda.memory_allocated()} bytes" in message
    assert kael.memory_stats("cuda")["cached_bytes"] == 0 and held.sum().item() == 1 << 18


def test_kernel_arguments_reach_the_device_without_waiting_for_queued_work(monkeypatch):
    """The argument words of hand-written kernels (reductions, scans, index walks) are copied
    from a pinned block on the current stream: the blocking copy from pageable memory, which
    waits for every queued kernel, is never used, and the pinned block waits for its copy."""
    from kael.runtime import cuda_driver
    from kael.runtime.allocator import PINNED

    def blocking(*args):
        raise AssertionError("a blocking host-to-device copy")

    monkeypatch.setattr(cuda_driver, "memcpy_htod", blocking)
    monkeypatch.setattr(cuda_driver, "event_query", lambda event: False)  # copies still queued
    x = kael.arange(1000, dtype=kael.float32, device=DEVICE)
    got = (x.sum(), x.cumsum(0)[-1], x[kael.arange(3, 1000, 996, device=DEVICE)].sum())
    scaled = x * kael.tensor(2.0)  # a CPU scalar operand, staged
    halves = kael.arange(4, device=DEVICE) // 2  # integer division: an error word, staged
    assert PINNED.pending_bytes() > 0  # each staging block waits for its copy's event
    monkeypatch.undo()
    assert [float(v.item()) for v in got] == [499500.0, 499500.0, 1002.0]
    assert scaled[-1].item() == 1998.0 and halves.tolist() == [0, 0, 1, 1]


def test_a_block_read_on_one_stream_is_not_reused_on_another(monkeypatch):
    """x made on the null stream, read on s1 (unmarked), freed: s2's allocation must not get
    its block while s1 may still run (events that never finish stand for a busy GPU); the
    null stream, which waits for every stream, may; a side stream reuses its own blocks."""
    from kael.runtime import cuda_driver
    from kael.runtime.allocator import caching_allocator_enabled

    if not caching_allocator_enabled():
        pytest.skip("reuse needs the caching allocator (KAEL_NO_CACHING_ALLOCATOR is set)")
    monkeypatch.setattr(cuda_driver, "event_query", lambda event: False)
    s1, s2 = kael.cuda.Stream(), kael.cuda.Stream()
    x = kael.ones(300, device=DEVICE)
    block = x.data_ptr()
    with kael.cuda.stream(s1):
        y = x * 3
    del x
    with kael.cuda.stream(s2):
        z = kael.zeros(300, device=DEVICE)
        assert z.data_ptr() != block
        own = z.data_ptr()
        del z
        assert kael.ones(300, device=DEVICE).data_ptr() == own
    assert kael.zeros(300, device=DEVICE).data_ptr() == block and y.sum().item() == 900


def test_work_on_a_stream_gives_the_same_results_and_the_stream_is_current_inside():
    s = kael.cuda.Stream()
    a = _host((300,), kael.float32, 39)
    with kael.cuda.stream(s) as inside:
        assert inside is s and kael.cuda.current_stream() == s
        on_device = a.to(DEVICE)
        got = (on_device * 2.0).cumsum(0)
        host = got.cpu()  # waits for s only
    assert kael.cuda.current_stream() == kael.cuda.default_stream()
    np.testing.assert_array_equal(host.numpy(), (a * 2.0).cumsum(0).numpy())
    assert s.query()
    s.synchronize()


def test_streams_wait_for_each_other_through_events():
    first, second = kael.cuda.Stream(), kael.cuda.Stream()
    with kael.cuda.stream(first):
        x = kael.ones(64, device=DEVICE) * 3.0
    second.wait_stream(first)
    with kael.cuda.stream(second):
        x.record_stream(second)
        y = x + 1.0
    second.synchronize()
    assert y.cpu().numpy().tolist() == [4.0] * 64


def test_timing_events_measure_the_work_between_them():
    start, end = kael.cuda.Event(enable_timing=True), kael.cuda.Event(enable_timing=True)
    start.record()
    (kael.ones(4096, device=DEVICE) * 2.0).sum()
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) > 0.0


def test_event_and_stream_misuse_raise_typed_errors():
    untimed, timed = kael.cuda.Event(), kael.cuda.Event(enable_timing=True)
    untimed.record()
    timed.record()
    with pytest.raises(kael.Error, match="enable_timing=True"):
        untimed.elapsed_time(timed)
    with pytest.raises(kael.Error, match="must be recorded"):
        timed.elapsed_time(kael.cuda.Event(enable_timing=True))
    refused = pytest.raises(
        kael.TypeError, match=r"stream\(\): expected a kael.cuda.Stream, got int"
    )
    with refused, kael.cuda.stream(3):
        pass
    with pytest.raises(kael.Error, match="record_stream\\(\\): expected a cuda tensor"):
        kael.ones(2).record_stream(kael.cuda.Stream())


def test_device_launches_are_timed_by_events_and_reported_with_bytes_and_flops():
    from kael.frontend.inspection import record_launches

    x = _host((64, 64), kael.float32, 40).to(DEVICE)
    _, launches = record_launches(lambda a: (a @ a).sum(1), x)
    kernels = [launch for launch in launches if launch.kind == "kernel"]
    assert [launch.symbol.split("_")[1] for launch in kernels] == ["gemm", "sum"]
    assert all(launch.seconds > 0 for launch in launches)
    assert launches[0].flops == 2 * 64**3
    assert launches[1].bytes_moved == 64 * (64 * 4 + 4) and launches[1].kernel is not None


def test_a_non_blocking_copy_from_pinned_memory_arrives_whole():
    host = _host((1000,), kael.float32, 41)
    pinned = host.pin_memory()
    assert pinned.is_pinned() and not host.is_pinned() and pinned.pin_memory() is pinned
    s = kael.cuda.Stream()
    with kael.cuda.stream(s):
        on_device = pinned.to(DEVICE, non_blocking=True)
    s.synchronize()
    _same_bits(on_device, host.to(DEVICE))
    _same_bits(kael.ones(3).pin_memory().to(DEVICE, non_blocking=True), kael.ones(3, device=DEVICE))


def test_pin_memory_and_non_blocking_refuse_what_they_cannot_do():
    with pytest.raises(kael.Error, match=r"pin_memory\(\): only CPU tensors can be pinned"):
        kael.ones(2, device=DEVICE).pin_memory()
    with pytest.raises(kael.TypeError, match="non_blocking must be a bool, got int"):
        kael.ones(2).to(DEVICE, non_blocking=1)


def test_synchronize_returns_once_queued_work_is_done():
    a = kael.ones(1 << 20, device=DEVICE)
    b = a * 3.0
    kael.cuda.synchronize()
    assert float(b.sum().cpu().item()) == 3.0 * (1 << 20)


# ---- the dtypes beyond the book: the same kernels, narrow loads and stores ----------------------

NARROW = [kael.int32, kael.int16, kael.int8, kael.uint8, kael.float16, kael.bfloat16]


def _narrow_host(shape, dtype, seed: int = 0) -> kael.Tensor:
    values = np.random.default_rng(seed).standard_normal(shape) * 50
    return kael.tensor(values.astype(np.float32)).to(dtype)


def _same_values(got: kael.Tensor, want: kael.Tensor) -> None:
    assert str(got.device) == "cuda:0" and got.dtype == want.dtype and got.shape == want.shape
    assert got.cpu().tolist() == want.tolist()


@pytest.mark.parametrize("dtype", NARROW, ids=str)
def test_narrow_dtypes_compute_on_the_device_as_on_the_cpu(dtype):
    a, b = _narrow_host((333, 7), dtype, 1), _narrow_host((333, 7), dtype, 2)
    da, db = a.to(DEVICE), b.to(DEVICE)
    _same_values(da + db * 2, a + b * 2)
    _same_values(kael.maximum(da, db), kael.maximum(a, b))
    _same_values(da.to(kael.float32), a.to(kael.float32))
    _same_values(da.float().to(dtype), a.float().to(dtype))
    _same_values(da.amax(0), a.amax(0))
    _same_values(da.sum(1), a.sum(1))
    _same_values(da.argmin(1), a.argmin(1))
    _same_values(kael.cumsum(da, 1), kael.cumsum(a, 1))
    _same_values(kael.sort(da, 1).values, kael.sort(a, 1).values)
    _same_values(da[kael.tensor([3, 0, 5]).to(DEVICE)], a[kael.tensor([3, 0, 5])])
    if dtype.is_floating_point:  # the float32 product, rounded once: the same on both
        _same_values(da[:5] @ db[:5].T, a[:5] @ b[:5].T)
        _same_values(kael.softmax(da, 1), kael.softmax(a, 1))


@pytest.mark.parametrize("name", ["elu", "selu", "leaky_relu", "hardswish", "mish", "softplus"])
def test_activations_on_the_device_agree_with_the_cpu(name):
    import kael.nn.functional as F

    x = _host((257, 9), kael.float32, 3)
    _close(getattr(F, name)(x.to(DEVICE)), getattr(F, name)(x), 2e-6)


def test_dropout_on_the_device_draws_the_cpus_mask():
    import kael.nn.functional as F

    x = _host((4099,), kael.float32, 4)
    kael.manual_seed(11)
    on_cpu = F.dropout(x, 0.25)
    kael.manual_seed(11)
    _same_bits(F.dropout(x.to(DEVICE), 0.25), on_cpu)


def test_losses_on_the_device_agree_with_the_cpu():
    import kael.nn.functional as F

    x, y = _host((65, 7), kael.float32, 5), _host((65, 7), kael.float32, 6)
    t = kael.tensor(np.arange(65) % 7)
    for fn in (
        lambda a, b: F.mse_loss(a, b),
        lambda a, b: F.huber_loss(a, b, reduction="none"),
        lambda a, b: F.binary_cross_entropy_with_logits(a, (b > 0).float()),
        lambda a, b: F.cosine_similarity(a, b),
    ):
        _close(fn(x.to(DEVICE), y.to(DEVICE)), fn(x, y), 2e-6)
    logp = kael.log_softmax(x, 1)
    _close(F.nll_loss(logp.to(DEVICE), t.to(DEVICE)), F.nll_loss(logp, t), 2e-6)


def test_norms_and_attention_on_the_device_agree_with_the_cpu():
    import kael.nn.functional as F

    x = _host((4, 3, 6), kael.float32, 7)
    w = _host((3,), kael.float32, 8)
    d = x.to(DEVICE)
    _close(F.group_norm(d, 3, w.to(DEVICE)), F.group_norm(x, 3, w), 2e-6)
    _close(
        F.batch_norm(d, None, None, training=True), F.batch_norm(x, None, None, training=True), 2e-6
    )
    q, k, v = (_host((2, 5, 8), kael.float32, s) for s in (9, 10, 11))
    on_cpu = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    _close(
        F.scaled_dot_product_attention(q.cuda(), k.cuda(), v.cuda(), is_causal=True), on_cpu, 2e-6
    )


def test_convolution_and_pooling_on_the_device_agree_with_the_cpu():
    import kael.nn.functional as F

    x = _host((2, 3, 9, 8), kael.float32, 12)
    w = _host((4, 3, 3, 3), kael.float32, 13)
    d = x.to(DEVICE)
    _close(F.conv2d(d, w.to(DEVICE), padding=1), F.conv2d(x, w, padding=1), 2e-6)
    _close(F.max_pool2d(d, 3, 2, 1), F.max_pool2d(x, 3, 2, 1), 0)
    _close(F.avg_pool2d(d, 2), F.avg_pool2d(x, 2), 2e-6)
    # the divisor of divisor_override is made on the input's device
    _close(F.avg_pool2d(d, 2, divisor_override=3), F.avg_pool2d(x, 2, divisor_override=3), 2e-6)


def test_interpolate_on_the_device_agrees_with_the_cpu():
    import kael.nn.functional as F

    x = _host((1, 2, 5, 7), kael.float32, 14)
    for mode in ("nearest", "bilinear", "bicubic"):
        _close(
            F.interpolate(x.to(DEVICE), size=(8, 4), mode=mode),
            F.interpolate(x, size=(8, 4), mode=mode),
            2e-6,
        )


def test_complex_arithmetic_and_fft_on_the_device_match_the_cpu():
    rng = np.random.default_rng(41)
    z = (rng.standard_normal((2, 24)) + 1j * rng.standard_normal((2, 24))).astype(np.complex64)
    host = kael.tensor(z)
    dev = host.to(DEVICE)
    for op in (lambda a: a * a / (a + 1j), lambda a: a.abs(), lambda a: a.exp(), lambda a: a @ a.T):
        _close(op(dev), op(host), 1e-5)
    for fn in (
        kael.fft.fft,
        kael.fft.ifft,
        lambda a: kael.fft.fft(a[:, :13]),
    ):  # radix-2, Bluestein
        _close(fn(dev), fn(host), 1e-5)
    real = kael.tensor(z.real.copy())
    _close(kael.fft.rfft(real.to(DEVICE)), kael.fft.rfft(real), 1e-5)
