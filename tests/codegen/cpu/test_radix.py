"""The radix-sort kernels (what sort and argsort run for rows of 16 keys a key byte or more),
through the runner the GPU shares: the host's stable order for every dtype, NaN last
ascending and first descending, -0 tied with +0, ties in input order both ways, and the
keys' own bits moved into the sorted values; rows split into chunks and grouped, and only
the digits some key varies in take a pass."""

import numpy as np
import pytest
from kernel_helpers import assert_keys_at, host_keys, stable_argsort

import kael
from kael.codegen.cpu import handwritten, radix
from kael.frontend import index_ops

DTYPES = [kael.float32, kael.float64, kael.float16, kael.bfloat16, kael.int64, kael.int32,
          kael.int16, kael.int8, kael.uint8, kael.bool]  # fmt: skip


class _Counting(handwritten.HostRunner):
    """A host runner that records the symbols it launches."""

    __slots__ = ("launched", "words")

    def __init__(self) -> None:
        super().__init__()
        self.launched: list[str] = []
        self.words: list[list[int]] = []

    def run(self, name, build, symbol, words, items, moved, **kw) -> None:
        self.launched.append(symbol)
        self.words.append(list(words))
        super().run(name, build, symbol, words, items, moved, **kw)


def _order(x: kael.Tensor, descending: bool, runner=None) -> np.ndarray:
    """The kernels' order of x's rows; their sorted values checked bit for bit against the
    keys at that order (the passes move the keys' bits: -0 and NaN payloads stay)."""
    rows, n = x.shape
    out = kael.empty(rows, n, dtype=kael.int64)
    values = kael.empty(rows, n, dtype=x.dtype)
    kept = []

    def space(nbytes: int) -> int:
        kept.append(kael.empty(nbytes, dtype=kael.uint8))
        return kept[-1].data_ptr()

    runner = runner or handwritten.HostRunner()
    at = (x.data_ptr(), rows, n, descending, out.data_ptr(), space, values.data_ptr())
    radix.order(runner, x.dtype, *at)
    runner.close()
    order = out.numpy()
    assert_keys_at(values, x, order)
    return order


def _keys(dtype, rows: int, n: int, seed: int, special: bool = True) -> kael.Tensor:
    """Few distinct values (many ties), with infinities among the floats, and NaN and -0
    when `special`."""
    rng = np.random.default_rng(seed)
    values = rng.integers(-40, 40, (rows, n)).astype(np.float64)
    if dtype is kael.bool:
        return kael.tensor(values > 0)
    if dtype is kael.uint8:
        return kael.tensor(values + 40).to(dtype)
    if dtype.is_floating_point:
        values *= 0.375
        shares = ((np.nan, 0.1), (-0.0, 0.05)) if special else ()
        for value, share in (*shares, (np.inf, 0.02), (-np.inf, 0.02)):
            values[rng.random((rows, n)) < share] = value
    return kael.tensor(values).to(dtype)


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize("rows, n", [(1, 1), (3, 2), (2, 33), (4, 300), (1, 9000)])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_radix_sort_gives_the_host_sorts_stable_order(dtype, rows, n, descending):
    x = _keys(dtype, rows, n, n)
    want = stable_argsort(host_keys(x), descending)
    np.testing.assert_array_equal(_order(x, descending), want)


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize(
    "dtype", [kael.float32, kael.float64, kael.float16, kael.bfloat16], ids=str
)
def test_floats_without_negative_zero_or_nan_take_the_plain_flip_and_sort_alike(dtype, descending):
    # the passes order such floats by the plain flip; one -0 or NaN asks for ordered()'s
    for special, code in ((False, radix.PLAIN_FLOAT_CODE), (True, radix.FLOAT_CODE)):
        x = _keys(dtype, 3, 300, 5, special)
        runner = _Counting()
        want = stable_argsort(host_keys(x), descending)
        np.testing.assert_array_equal(_order(x, descending, runner), want)
        form = radix.COUNT_WORDS.index("form")
        counts = [w for s, w in zip(runner.launched, runner.words) if "_count_" in s]
        assert counts and all(w[form] == code for w in counts)


@pytest.mark.parametrize("dtype", [kael.uint8, kael.float32], ids=str)
def test_passes_sort_the_bounds_kernels_copy_though_the_input_changes(monkeypatch, dtype):
    # another thread may write the input between launches (large ones release the GIL):
    # the passes read the copy the bounds kernel made, so what they count they move, and
    # nothing lands past the outputs
    values = np.tile(np.arange(16), 256)
    x = kael.tensor(values).to(dtype)
    want = stable_argsort(values, False)
    run = handwritten.HostRunner.run

    def meddling(self, name, build, symbol, words, *args, **kw):
        if "_move_" in symbol and "_first" in symbol:
            x.fill_(15)  # every key now in the top digit: the counts no longer fit
        return run(self, name, build, symbol, words, *args, **kw)

    monkeypatch.setattr(handwritten.HostRunner, "run", meddling)
    n = values.size
    out, moved = kael.empty(1, n, dtype=kael.int64), kael.empty(1, n, dtype=dtype)
    space = [kael.empty(1 << 20, dtype=kael.uint8) for _ in range(8)]
    spaces = iter(s.data_ptr() for s in space)
    at = (x.data_ptr(), 1, n, False, out.data_ptr(), lambda nbytes: next(spaces))
    radix.order(handwritten.HostRunner(), dtype, *at, moved.data_ptr())
    np.testing.assert_array_equal(out.numpy()[0], want)
    np.testing.assert_array_equal(moved.to(kael.float64).numpy()[0], values[want])


def test_one_negative_zero_after_the_zeros_ties_with_them():
    # the plain flip would put -0 before +0: one -0, the row's last key, must turn it off
    x = kael.tensor([[2.0, 0.0, 1.0, -1.0] * 20 + [-0.0]])
    order = _order(x, False)[0]
    assert order[20:41].tolist() == [*range(1, 80, 4), 80]


@pytest.mark.parametrize("dtype", [kael.int64, kael.int32, kael.int16, kael.int8], ids=str)
def test_radix_sort_orders_the_full_range_of_signed_integers(dtype):
    info = np.iinfo(dtype.numpy)
    rng = np.random.default_rng(7)
    values = rng.integers(info.min, info.max, (2, 3000), dtype=dtype.numpy, endpoint=True)
    values[0, :4] = [info.min, info.max, 0, -1]
    for descending in (False, True):
        want = stable_argsort(values, descending)
        np.testing.assert_array_equal(_order(kael.tensor(values), descending), want)


def test_negative_zero_ties_with_zero_and_nans_tie_with_each_other():
    x = kael.tensor([[0.0, -0.0, float("nan"), -0.0, 0.0, -float("nan"), 1.0, -1.0]])
    assert _order(x, False).tolist() == [[7, 0, 1, 3, 4, 6, 2, 5]]
    assert _order(x, True).tolist() == [[2, 5, 6, 0, 1, 3, 4, 7]]


@pytest.mark.parametrize("n", [radix.MIN_CHUNK - 1, radix.MIN_CHUNK, 4 * radix.MIN_CHUNK + 3])
def test_chunked_rows_keep_the_stable_order_across_chunk_borders(n):
    x = _keys(kael.float32, 1, n, 3)  # one row: split into chunks when it is long enough
    want = stable_argsort(x.numpy(), False)
    np.testing.assert_array_equal(_order(x, False), want)
    assert radix._chunks(1, n, True) == max(
        1, min(4 * kael.get_num_threads(), n // radix.MIN_CHUNK)
    )


def test_row_groups_bound_the_counters_and_keep_every_rows_order(monkeypatch):
    monkeypatch.setattr(radix, "MAX_ITEMS", 3)  # groups of 3 rows of one chunk
    x = _keys(kael.int64, 10, 50, 4)
    runner = _Counting()
    want = stable_argsort(x.numpy(), True)
    np.testing.assert_array_equal(_order(x, True, runner), want)
    assert runner.launched.count("kael_radix_keys_signed_u64") == 4  # 10 rows: 3 + 3 + 3 + 1


@pytest.mark.parametrize(
    "low, high, passes",
    [
        (0, 2**20, 3),
        (0, 256, 1),
        (-128, 128, 1),
        (-(2**19), 2**19, 3),
        (5, 6, 1),
        (-(2**62), 2**62, 8),
    ],
)
def test_only_digits_some_key_varies_in_take_a_pass(low, high, passes):
    values = np.random.default_rng(8).integers(low, high, (1, 5000))
    runner = _Counting()
    got = _order(kael.tensor(values), False, runner)
    np.testing.assert_array_equal(got, np.argsort(values, axis=-1, kind="stable"))
    assert runner.launched.count("kael_radix_count_u64") == passes


def test_rows_longer_than_int32_positions_are_the_merge_sorts():
    assert radix.MAX_ROW == 2**31 - 1  # positions travel between passes as int32
    assert index_ops._sort_kernel(kael.int8, radix.MAX_ROW) == "radix"
    assert index_ops._sort_kernel(kael.int8, radix.MAX_ROW + 1) == "merge"


def test_a_gpu_row_takes_one_chunk_a_thread_up_to_device_chunks():
    assert radix._chunks(3, 1, False) == 1
    assert radix._chunks(3, radix.DEVICE_CHUNK + 1, False) == 2
    limit = radix.DEVICE_CHUNK * radix.DEVICE_CHUNKS
    assert (
        radix._chunks(1, limit, False) == radix._chunks(1, 40 * limit, False) == radix.DEVICE_CHUNKS
    )


def _selected(x: kael.Tensor, ranks: list[int]) -> np.ndarray:
    rows, n = x.shape
    out = kael.empty(rows, dtype=kael.int64)
    left = kael.tensor(ranks, dtype=kael.int64)
    kept = []

    def space(nbytes: int) -> int:
        kept.append(kael.empty(nbytes, dtype=kael.uint8))
        return kept[-1].data_ptr()

    runner = handwritten.HostRunner()
    radix.select(runner, x.dtype, x.data_ptr(), rows, n, left.data_ptr(), out.data_ptr(), space)
    runner.close()
    return out.numpy()


@pytest.mark.parametrize("rows, n", [(1, 1), (3, 5), (2, 300), (1, 9000)])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_radix_select_gives_the_position_the_stable_sort_puts_at_each_rank(dtype, rows, n):
    x = _keys(dtype, rows, n, n + 7)
    order = stable_argsort(host_keys(x), False)
    for ranks in ([0] * rows, [n - 1] * rows, [(n * (r + 1)) // (rows + 1) for r in range(rows)]):
        np.testing.assert_array_equal(_selected(x, ranks), order[np.arange(rows), ranks])


def test_radix_select_of_every_rank_of_a_row_with_ties_is_the_stable_order():
    x = kael.tensor([[3.0, -0.0, float("nan"), 1.0, 0.0, 3.0, float("nan"), -1.0, 3.0]])
    order = stable_argsort(x.numpy(), False)[0]
    assert [_selected(x, [r])[0] for r in range(9)] == order.tolist()


def test_radix_select_in_groups_and_chunks_keeps_each_rows_rank(monkeypatch):
    monkeypatch.setattr(radix, "MAX_ITEMS", 4)  # groups of 2 rows of 2 chunks
    monkeypatch.setattr(radix, "MIN_CHUNK", 40)
    x = _keys(kael.int32, 5, 100, 9)
    ranks = [0, 17, 50, 99, 63]
    order = stable_argsort(x.numpy(), False)
    np.testing.assert_array_equal(_selected(x, ranks), order[np.arange(5), ranks])


@pytest.mark.parametrize("descending", [False, True], ids=["smallest", "largest"])
@pytest.mark.parametrize("k", [1, 2, 150, 300])
@pytest.mark.parametrize("dtype", [kael.float32, kael.int16, kael.bfloat16, kael.bool], ids=str)
def test_radix_top_keeps_the_stable_orders_first_k_in_input_order(dtype, k, descending):
    x = _keys(dtype, 3, 300, k)
    out = kael.empty(3, k, dtype=kael.int64)
    kept = []

    def space(nbytes: int) -> int:
        kept.append(kael.empty(nbytes, dtype=kael.uint8))
        return kept[-1].data_ptr()

    runner = handwritten.HostRunner()
    radix.top(runner, x.dtype, x.data_ptr(), 3, 300, k, descending, out.data_ptr(), space)
    runner.close()
    want = np.sort(stable_argsort(host_keys(x), descending)[:, :k], axis=1)
    np.testing.assert_array_equal(out.numpy(), want)
