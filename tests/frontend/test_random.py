"""Random sampling: reproducibility, statistics, checks, threads and fork (never fixed samples).

Statistical bounds are z = 6 standard errors of the sample size used (or chi-square
bounds of df + 6 sqrt(2 df)), so a correct generator fails them with odds below 1e-8;
seeds are fixed, so every run is the same run anyway.
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
import warnings

import numpy as np
import pytest
import torch
from kernel_helpers import run_python
from parity_helpers import both_refuse, resized_out

import kael
from kael.frontend import random as kr
from kael.runtime.dtypes import INT64_MAX, INT64_MIN

Z = 6.0
BELOW_ONE = np.nextafter(np.float32(1), np.float32(0))


@pytest.fixture(autouse=True)
def _restore_generator_and_threads():
    state, threads = kr.default_generator.position(), kael.get_num_threads()
    yield
    kr.default_generator.restore(*state)
    kael.set_num_threads(threads)


def np_of(t: kael.Tensor) -> np.ndarray:
    return t.cpu().numpy().copy()


def chi_square_bound(df: int) -> float:
    return df + Z * math.sqrt(2 * df)


def chi_square(counts: np.ndarray, expected: np.ndarray) -> float:
    return float(((counts - expected) ** 2 / expected).sum())


# Every sampler, as a call on a fixed shape (big enough to cross the 1 MiB threading cut
# when asked to be).
def _weights(rows: int) -> kael.Tensor:
    return kael.tensor(np.tile(np.arange(64, dtype=np.float64) % 7, (rows, 1)))


SAMPLERS = {
    "rand32": lambda n: kr.rand(n),
    "rand64": lambda n: kr.rand(n, dtype=kael.float64),
    "randn32": lambda n: kr.randn(n),
    "randn64": lambda n: kr.randn(n, dtype=kael.float64),
    "randint": lambda n: kr.randint(-5, 1000, (n,)),
    "randperm": lambda n: kr.randperm(n),
    "bernoulli": lambda n: kr.bernoulli(kael.full((n,), 0.3, dtype=kael.float64)),
    "bernoulli_p": lambda n: kr.bernoulli((n,), 0.7, dtype=kael.int64),
    "multinomial": lambda n: kr.multinomial(_weights(max(1, n // 64)), 8, replacement=True),
    "multinomial_once": lambda n: kr.multinomial(_weights(max(1, n // 64)), 5),
}


# ---- reproducibility ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_same_seed_same_values_and_other_seeds_differ(name):
    draw = SAMPLERS[name]
    kr.manual_seed(1234)
    first, second = np_of(draw(4096)), np_of(draw(4096))
    kr.manual_seed(1234)
    np.testing.assert_array_equal(np_of(draw(4096)), first)
    np.testing.assert_array_equal(np_of(draw(4096)), second)
    assert not np.array_equal(first, second)  # the offset moved on
    kr.manual_seed(1235)
    assert not np.array_equal(np_of(draw(4096)), first)


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_one_thread_and_many_threads_give_identical_values(name):
    draw, n = SAMPLERS[name], 1 << 19  # 4 MiB of float64: split over the pool
    results = []
    for threads in (1, 4):
        kael.set_num_threads(threads)
        kr.manual_seed(99)
        results.append(np_of(draw(n)))
    np.testing.assert_array_equal(results[0], results[1])


def test_offset_advances_by_the_counters_each_call_consumes():
    kr.manual_seed(5)
    kr.rand(2, 3)
    kr.randn(4, dtype=kael.float64)
    kr.randint(0, 3, (5,))
    kr.multinomial(kael.ones(2, 4), 3, replacement=True)
    kr.rand(0)
    assert kr.default_generator.position() == (5, 6 + 4 + 5 + 2 * 3)


def test_consecutive_calls_continue_one_stream():
    kr.manual_seed(8)
    whole = np_of(kr.rand(15, dtype=kael.float64))
    kr.manual_seed(8)
    parts = [np_of(kr.rand(10, dtype=kael.float64)), np_of(kr.rand(5, dtype=kael.float64))]
    np.testing.assert_array_equal(np.concatenate(parts), whole)


def test_multi_dim_outputs_take_counters_in_row_major_order():
    kr.manual_seed(3)
    flat = np_of(kr.rand(24, dtype=kael.float64))
    kr.manual_seed(3)
    np.testing.assert_array_equal(
        np_of(kr.rand(2, 3, 4, dtype=kael.float64)), flat.reshape(2, 3, 4)
    )


@pytest.mark.parametrize("sampler", ["rand", "randn"])
def test_float32_is_the_float64_sequence_rounded(sampler):
    fn = getattr(kr, sampler)
    kr.manual_seed(77)
    wide = np_of(fn(100_000, dtype=kael.float64))
    kr.manual_seed(77)
    narrow = np_of(fn(100_000, dtype=kael.float32))
    want = wide.astype(np.float32)
    want[want == 1.0] = BELOW_ONE
    np.testing.assert_array_equal(narrow, want)


def test_negative_seeds_wrap_as_in_torch():
    kr.manual_seed(-1)
    assert kr.initial_seed() == 2**64 - 1
    a = np_of(kr.rand(8))
    kr.manual_seed(2**64 - 1)
    np.testing.assert_array_equal(np_of(kr.rand(8)), a)


def test_a_fresh_process_starts_from_the_default_seed():
    script = "import kael.frontend.random as r; print(r.rand(6, dtype=r.float64).numpy().tolist())"
    out = run_python(script).stdout
    kr.manual_seed(kr.DEFAULT_SEED)
    assert out.strip() == str(np_of(kr.rand(6, dtype=kael.float64)).tolist())


def test_shapes_dtypes_and_like_variants():
    assert kr.rand(2, 3).shape == kr.rand((2, 3)).shape == (2, 3)
    assert kr.rand().shape == ()
    assert kr.randn([4], dtype=kael.float64).dtype is kael.float64
    base = kael.zeros(3, 2, dtype=kael.float64)
    for like in (kr.rand_like, kr.randn_like):
        out = like(base)
        assert (out.shape, out.dtype, out.device) == ((3, 2), kael.float64, base.device)
        assert like(base, dtype=kael.float32).dtype is kael.float32
    assert kr.randint(3, (2, 2)).dtype is kael.int64
    assert kr.randint(0, 3, (2,), dtype=kael.float64).dtype is kael.float64
    assert kr.multinomial(kael.ones(5), 3).shape == (3,)
    assert kr.multinomial(kael.ones(2, 5), 3).shape == (2, 3)
    assert kr.multinomial(kael.ones(0, 5), 3).shape == (0, 3)
    assert kr.bernoulli(kael.zeros(2, dtype=kael.int64), 0.5).dtype is kael.int64
    assert kr.randperm(0).shape == (0,)


# ---- ranges and the float32 edge --------------------------------------------------------------


def test_rand_is_in_the_unit_interval():
    kr.manual_seed(1)
    for dtype in (kael.float32, kael.float64):
        x = np_of(kr.rand(1 << 20, dtype=dtype))
        assert x.min() >= 0.0 and x.max() < 1.0


def test_float32_rounding_maps_bits_near_two_to_the_64_below_one():
    bits = np.array([-1, -(1 << 11), -(1 << 39), -(1 << 39) - (1 << 11), 0, 1 << 62], np.int64)
    wide = np_of(kr.unit_from_bits(kael.tensor(bits), kael.float64))
    narrow = np_of(kr.unit_from_bits(kael.tensor(bits), kael.float32))
    np.testing.assert_array_equal(wide[-2:], [0.0, 0.25])
    assert (wide < 1.0).all() and wide[0] == 1 - 2.0**-53
    # (2**53 - 1) * 2**-53 and its neighbours round to 1.0f; rand makes them the float below.
    assert (wide[:3].astype(np.float32) == 1.0).all()
    np.testing.assert_array_equal(narrow[:3], [BELOW_ONE] * 3)
    assert narrow[3] == wide[3].astype(np.float32) == BELOW_ONE  # just below the midpoint


def test_rand_float32_never_returns_one_where_float64_rounds_up():
    # Find a counter whose float64 rounds to 1.0f (about one in 2**25), then draw float32 there.
    kr.manual_seed(1)
    chunk, found = 1 << 22, None
    for start in range(0, 64 * chunk, chunk):
        hits = np.flatnonzero(np_of(kr.rand(chunk, dtype=kael.float64)).astype(np.float32) == 1)
        if hits.size:
            found = start + int(hits[0])
            break
    assert found is not None, "no float64 sample rounds up to 1.0f in 2**28 draws"
    kr.default_generator.restore(1, found)
    assert np_of(kr.rand(1)).tolist() == [BELOW_ONE]


# ---- statistics ---------------------------------------------------------------------------------


def test_rand_moments_and_histogram():
    n = 1 << 20
    kr.manual_seed(11)
    x = np_of(kr.rand(n, dtype=kael.float64))
    assert abs(x.mean() - 0.5) < Z * math.sqrt(1 / 12 / n)
    assert abs(x.var() - 1 / 12) < Z * math.sqrt((1 / 80 - 1 / 144) / n)
    counts = np.histogram(x, bins=64, range=(0, 1))[0]
    assert chi_square(counts, np.full(64, n / 64)) < chi_square_bound(63)


def test_randn_moments_and_tails():
    n = 1 << 20
    kr.manual_seed(12)
    z = np_of(kr.randn(n, dtype=kael.float64))
    assert abs(z.mean()) < Z / math.sqrt(n)
    assert abs(z.var() - 1) < Z * math.sqrt(2 / n)
    assert abs((z**3).mean()) < Z * math.sqrt(15 / n)
    assert abs((z**4).mean() - 3) < Z * math.sqrt(96 / n)
    # P(|z| > 2) = 0.0455 (a binomial count) and no value beyond what 53 bits allow.
    p = math.erfc(2 / math.sqrt(2))
    assert abs((np.abs(z) > 2).mean() - p) < Z * math.sqrt(p * (1 - p) / n)
    assert np.isfinite(z).all() and np.abs(z).max() < math.sqrt(-2 * math.log(2.0**-53))


def test_randint_is_uniform_over_the_range():
    n, low, high = 200_000, -3, 7
    kr.manual_seed(13)
    x = np_of(kr.randint(low, high, (n,)))
    assert x.min() == low and x.max() == high - 1
    counts = np.bincount(x - low, minlength=high - low)
    assert chi_square(counts, np.full(high - low, n / (high - low))) < chi_square_bound(9)


def test_randint_over_the_full_int64_range():
    n = 100_000
    kr.manual_seed(14)
    x = np_of(kr.randint(INT64_MIN, INT64_MAX, (n,)))
    # The span exceeds 2**63: halves and the top byte must still be uniform.
    assert abs((x < 0).mean() - 0.5) < Z * math.sqrt(0.25 / n)
    counts = np.bincount((x.view(np.uint64) >> np.uint64(56)).astype(np.int64), minlength=256)
    assert chi_square(counts, np.full(256, n / 256)) < chi_square_bound(255)
    assert (np_of(kr.randint(5, 6, (100,))) == 5).all()


def test_randperm_is_a_permutation_and_uniform():
    kr.manual_seed(15)
    for n in (1, 2, 1000):
        np.testing.assert_array_equal(np.sort(np_of(kr.randperm(n))), np.arange(n))
    draws = 2400
    codes = [int("".join(map(str, np_of(kr.randperm(4)))), 4) for _ in range(draws)]
    counts = np.unique(codes, return_counts=True)[1]
    assert counts.size == 24
    assert chi_square(counts, np.full(24, draws / 24)) < chi_square_bound(23)


def test_bernoulli_extremes_and_frequencies():
    n = 200_000
    kr.manual_seed(16)
    assert (np_of(kr.bernoulli((n,), 0.0)) == 0).all()
    assert (np_of(kr.bernoulli((n,), 1.0)) == 1).all()
    x = np_of(kr.bernoulli((n,), 0.3, dtype=kael.bool))
    assert x.dtype == np.bool_ and abs(x.mean() - 0.3) < Z * math.sqrt(0.21 / n)
    p = np.array([0.0, 0.25, 0.5, 1.0], np.float32)
    rows = 50_000
    y = np_of(kr.bernoulli(kael.tensor(np.tile(p, (rows, 1)))))
    assert y.dtype == np.float32 and set(np.unique(y)) <= {0.0, 1.0}
    bound = Z * np.sqrt(np.maximum(p * (1 - p), 1e-12) / rows)
    assert (np.abs(y.mean(axis=0) - p) <= bound).all()


def test_bernoulli_reads_strided_probabilities_in_logical_order():
    p = kael.tensor(np.linspace(0, 1, 12).reshape(3, 4)).T  # not contiguous
    kr.manual_seed(17)
    a = np_of(kr.bernoulli(p))
    kr.manual_seed(17)
    np.testing.assert_array_equal(np_of(kr.bernoulli(p.contiguous())), a)


def test_multinomial_with_replacement_follows_the_weights():
    w = np.array([1.0, 0.0, 3.0, 6.0])
    n = 100_000
    kr.manual_seed(18)
    x = np_of(kr.multinomial(kael.tensor(w, dtype=kael.float32), n, replacement=True))
    assert x.dtype == np.int64 and not (x == 1).any()
    counts = np.bincount(x, minlength=4)[[0, 2, 3]]
    assert chi_square(counts, n * w[[0, 2, 3]] / w.sum()) < chi_square_bound(2)


def test_multinomial_draws_the_upper_bound_of_each_uniform_point():
    # Draw j of row b uses the float64 uniform of counter b * samples + j (the rand stream).
    w = np.random.default_rng(0).random((3, 50)) * (np.arange(50) % 4 != 0)
    kr.manual_seed(19)
    x = np_of(kr.multinomial(kael.tensor(w), 40, replacement=True))
    kr.manual_seed(19)
    u = np_of(kr.rand(3, 40, dtype=kael.float64))
    cumulative = np.cumsum(w, axis=1)
    for b in range(3):
        want = np.searchsorted(cumulative[b], u[b] * cumulative[b, -1], side="right")
        np.testing.assert_array_equal(x[b], want)


def test_multinomial_without_replacement():
    w = kael.tensor([[1.0, 0.0, 2.0, 5.0, 0.0], [0.0, 0.0, 0.0, 0.0, 3.0]])
    kr.manual_seed(20)
    x = np_of(kr.multinomial(w[:1], 3, replacement=False))
    assert sorted(x[0]) == [0, 2, 3]
    one = np_of(kr.multinomial(w[1:], 1))
    assert one.tolist() == [[4]]
    # With weights [1, 3], the first pick is 1 with probability 3/4, the second the other.
    n = 20_000
    pairs = np_of(kr.multinomial(kael.tensor([[1.0, 3.0]] * n), 2))
    assert (np.sort(pairs, axis=1) == [0, 1]).all()
    assert abs((pairs[:, 0] == 1).mean() - 0.75) < Z * math.sqrt(0.75 * 0.25 / n)


# ---- checks -------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [kr.rand, kr.randn])
@pytest.mark.parametrize("dtype", [kael.int64, kael.bool])
def test_floating_samplers_reject_other_dtypes(fn, dtype):
    with pytest.raises(
        kael.TypeError, match=f"{fn.__name__} only supports floating point dtypes, got {dtype}"
    ):
        fn(3, dtype=dtype)
    like = kr.rand_like if fn is kr.rand else kr.randn_like
    with pytest.raises(kael.TypeError, match=f"got {dtype}"):
        like(kael.zeros(2, dtype=dtype))


def test_manual_seed_accepts_exactly_torchs_range():
    kr.manual_seed(INT64_MIN)
    kr.manual_seed(2**64 - 1)
    for seed in (INT64_MIN - 1, 2**64):
        with pytest.raises(kael.ValueError, match=f"seed={seed}"):
            kr.manual_seed(seed)
    with pytest.raises(kael.TypeError, match="seed must be an int, got float"):
        kr.manual_seed(1.5)


def test_randint_limits():
    assert (np_of(kr.randint(4, 5, (3,))) == 4).all()
    for low, high in ((5, 5), (6, 5)):
        with pytest.raises(kael.ValueError, match=f"low < high, got low={low}, high={high}"):
            kr.randint(low, high, (3,))
    kr.randint(0, INT64_MAX, (3,))
    with pytest.raises(kael.ValueError, match=f"high={INT64_MAX + 1}"):
        kr.randint(0, INT64_MAX + 1, (3,))
    kr.randint(INT64_MIN, 0, (3,))
    with pytest.raises(kael.ValueError, match=f"low={INT64_MIN - 1}"):
        kr.randint(INT64_MIN - 1, 0, (3,))
    with pytest.raises(kael.TypeError, match="size"):
        kr.randint(0, 2)


@pytest.mark.parametrize(
    ("low", "high", "dtype", "fits"),
    [
        (0, 256, "uint8", True), (0, 257, "uint8", False), (-1, 5, "uint8", False),
        (-128, 128, "int8", True), (0, 129, "int8", False), (-129, 5, "int8", False),
        (0, 2**31, "int32", True), (0, 2**31 + 1, "int32", False),
        (0, 2, "bool", True), (0, 3, "bool", False), (-1, 1, "bool", False),
        (0, 65505, "float16", True), (0, 70000, "float16", False),
    ],
)  # fmt: skip
def test_randint_and_random_refuse_bounds_outside_the_dtype(low, high, dtype, fits):
    """torch checks from and to - 1 against the dtype (randint, random_): kael drew uint8
    values of randint(0, 300) and wrapped them."""
    draws = [
        lambda L: L.randint(low, high, (64,), dtype=getattr(L, dtype)),
        lambda L: L.zeros(64, dtype=getattr(L, dtype)).random_(low, high),
    ]
    for draw in draws:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # float16 past 2**11 rounds: torch warns, as kael
            if fits:
                got = draw(kael).double()
                assert low <= got.min().item() and got.max().item() <= high - 1
                assert got.dtype is kael.float64 and draw(torch).shape == (64,)
            else:
                with pytest.raises(RuntimeError, match="out of bounds"):
                    draw(torch)
                with pytest.raises(kael.ValueError, match="out of bounds for " + dtype):
                    draw(kael)


def test_randint_draws_both_bools():
    got = kael.randint(0, 2, (256,), dtype=kael.bool)
    assert got.dtype is kael.bool and 0 < got.sum().item() < 256


def test_randperm_limits():
    assert np_of(kr.randperm(1)).tolist() == [0]
    assert kr.randperm(0).numel() == 0
    with pytest.raises(kael.ValueError, match="n >= 0, got n=-1"):
        kr.randperm(-1)
    with pytest.raises(kael.TypeError, match="randperm does not support dtype bool"):
        kr.randperm(3, dtype=kael.bool)


def test_bernoulli_limits():
    for p in (0.0, 1.0):
        kr.bernoulli((2,), p)
    for p in (-1e-9, 1.0000001, float("nan")):
        with pytest.raises(kael.ValueError, match=rf"p to be in \[0, 1\], but got p={p}"):
            kr.bernoulli((2,), p)
    kr.bernoulli(kael.tensor([0.0, 1.0]))
    for bad in (1.5, -0.5, float("nan")):
        with pytest.raises(kael.ValueError, match=rf"but got p={bad} at position \[1\]"):
            kr.bernoulli(kael.tensor([0.5, bad]))
    with pytest.raises(kael.TypeError, match="floating point probabilities, got int64"):
        kr.bernoulli(kael.tensor([0, 1]))
    with pytest.raises(kael.TypeError, match="needs a probability p"):
        kr.bernoulli((2,))


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), -float("inf")])
def test_multinomial_rejects_bad_weights_naming_value_and_position(bad):
    with pytest.raises(
        kael.ValueError, match=rf"non-negative weights, got {bad} at position \[1, 2\]"
    ):
        kr.multinomial(kael.tensor([[1.0, 1.0, 1.0], [1.0, 2.0, bad]]), 1)
    with pytest.raises(kael.ValueError, match=rf"got {bad} at position \[0\]"):
        kr.multinomial(kael.tensor([bad, 1.0]), 1, replacement=True)


def test_multinomial_limits():
    kr.multinomial(kael.tensor([0.0, 1e-300], dtype=kael.float64), 1)  # one positive is enough
    with pytest.raises(kael.ValueError, match="at least one positive weight, got none in row 1"):
        kr.multinomial(kael.tensor([[1.0, 0.0], [0.0, 0.0]]), 1, replacement=True)
    with pytest.raises(kael.ValueError, match="got none"):
        kr.multinomial(kael.ones(0), 1, replacement=True)
    w = kael.tensor([[1.0, 0.0, 2.0], [3.0, 4.0, 5.0]])
    assert kr.multinomial(w, 2).shape == (2, 2)  # row 0 has exactly 2 positive weights
    with pytest.raises(
        kael.ValueError, match="cannot draw num_samples=3 from 2 positive weights in row 0"
    ):
        kr.multinomial(w, 3)
    assert kr.multinomial(w, 30, replacement=True).shape == (2, 30)
    assert kr.multinomial(w, 1).shape == (2, 1)
    with pytest.raises(kael.ValueError, match="num_samples > 0, got num_samples=0"):
        kr.multinomial(w, 0)
    for shape in ((), (2, 2, 2)):
        with pytest.raises(kael.ValueError, match=f"1-d or 2-d weights, got {len(shape)} dims"):
            kr.multinomial(kael.ones(shape), 1)
    with pytest.raises(kael.TypeError, match="floating point weights, got int64"):
        kr.multinomial(kael.tensor([1, 2]), 1)


@pytest.mark.parametrize("flag", ["yes", 1, None])
def test_multinomial_replacement_must_be_a_bool(flag):
    with pytest.raises(kael.TypeError, match="replacement must be a bool, got"):
        kr.multinomial(kael.ones(3), 2, replacement=flag)


# ---- threads and fork ---------------------------------------------------------------------------


def test_concurrent_sampling_splits_the_stream_without_overlap():
    threads, calls, size = 8, 20, 1000
    kr.manual_seed(21)
    drawn: list[np.ndarray] = []

    def work():
        for _ in range(calls):
            drawn.append(np_of(kr.rand(size, dtype=kael.float64)))

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    total = threads * calls * size
    assert kr.default_generator.position() == (21, total)
    kr.manual_seed(21)
    whole = np_of(kr.rand(total, dtype=kael.float64))
    np.testing.assert_array_equal(np.sort(np.concatenate(drawn)), np.sort(whole))
    # Each call got one contiguous block of the stream.
    starts = sorted(int(np.flatnonzero(whole == d[0])[0]) for d in drawn)
    assert starts == list(range(0, total, size))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads running
def test_fork_while_another_thread_holds_the_generator_lock():
    held, release = threading.Event(), threading.Event()

    def hold():
        with kr.default_generator.lock:
            held.set()
            release.wait(0.5)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    # The before-fork hook waits until the holder gives up (after 0.5 s), so the child
    # never inherits the lock held.
    pid = os.fork()
    if pid == 0:
        try:
            kr.rand(16)
            os._exit(0)
        finally:
            os._exit(1)
    release.set()
    holder.join()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            break
        time.sleep(0.01)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the child hung on the generator lock")
    kr.rand(4)  # and the parent's lock was released too


# ---- Generator objects and generator= --------------------------------------------------------

GENERATOR_DRAWS = {
    "rand": lambda g: kael.rand(5, generator=g),
    "randn": lambda g: kael.randn(2, 3, generator=g),
    "randint": lambda g: kael.randint(3, 9, (6,), generator=g),
    "randperm": lambda g: kael.randperm(7, generator=g),
    "bernoulli": lambda g: kael.bernoulli(kael.full((8,), 0.5), generator=g),
    "multinomial": lambda g: kael.multinomial(kael.ones(6), 3, generator=g),
    "uniform_": lambda g: kael.empty(4).uniform_(-1, 1, generator=g),
    "normal_": lambda g: kael.empty(4).normal_(generator=g),
    "exponential_": lambda g: kael.empty(4).exponential_(generator=g),
    "random_": lambda g: kael.empty(4, dtype=kael.int32).random_(0, 100, generator=g),
}


@pytest.mark.parametrize("name", GENERATOR_DRAWS)
def test_a_generator_is_its_own_stream(name):
    draw = GENERATOR_DRAWS[name]
    a, b = kael.Generator().manual_seed(123), kael.Generator().manual_seed(123)
    before = kael.default_generator.position()
    first = draw(a).tolist()
    assert draw(b).tolist() == first  # same seed, same values
    assert kael.default_generator.position() == before  # the default stream did not move
    kael.manual_seed(123)
    assert draw(None).tolist() == first  # the default generator is one like them


def test_generator_state_round_trips_as_a_byte_tensor():
    g = kael.Generator().manual_seed(9)
    kael.rand(3, generator=g)
    state = g.get_state()
    assert state.dtype is kael.uint8 and state.shape == (16,)
    first = kael.randn(4, generator=g).tolist()
    g.set_state(state)
    assert kael.randn(4, generator=g).tolist() == first
    with pytest.raises(kael.TypeError, match="uint8 tensor"):
        g.set_state(kael.zeros(16))
    with pytest.raises(kael.ValueError, match="16 bytes"):
        g.set_state(kael.zeros(3, dtype=kael.uint8))


def test_generator_api_matches_torch():
    for lib in (kael, torch):
        g = lib.Generator()
        assert g.manual_seed(7) is g and g.initial_seed() == 7
        assert g.seed() == g.initial_seed()
        assert lib.manual_seed(3) is lib.default_generator
    assert str(kael.Generator("cuda").device) == "cuda:0"


def test_generator_argument_must_be_a_generator():
    with pytest.raises(kael.TypeError, match="generator must be a kael.Generator, got int"):
        kael.randn(3, generator=3)


def test_compiled_function_draws_from_its_generator_each_call():
    g = kael.Generator().manual_seed(1)

    @kael.compile
    def f(x):
        return x + kael.rand(3, generator=g)

    got = [f(kael.zeros(3)).tolist() for _ in range(3)]
    g.manual_seed(1)
    want = [kael.rand(3, generator=g).tolist() for _ in range(3)]
    assert got == want


# ---- in-place samplers ----------------------------------------------------------------------


def test_in_place_samplers_keep_layout_and_fill_their_range():
    x = kael.empty(4, 3).transpose(0, 1)
    assert x.uniform_(-2, 3) is x and x.shape == (3, 4)
    assert x.min().item() >= -2 and x.max().item() < 3
    big = kael.empty(20000, dtype=kael.float64)
    assert abs(big.normal_(5, 2).mean().item() - 5) < 0.1
    assert abs(big.std().item() - 2) < 0.1
    assert abs(big.exponential_(4).mean().item() - 0.25) < 0.02 and big.min().item() >= 0
    ints = kael.empty(5000, dtype=kael.int16).random_(-3, 4)
    assert ints.min().item() == -3 and ints.max().item() == 3
    assert kael.empty(5000, dtype=kael.uint8).random_(10).max().item() == 9


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: kael.empty(3).uniform_(2, 1), kael.ValueError, "from=2.0 > to=1.0"),
        (lambda: kael.empty(3, dtype=kael.int64).uniform_(), kael.TypeError, "floating"),
        (lambda: kael.empty(3).normal_(0, -1), kael.ValueError, "std >= 0.0"),
        (lambda: kael.empty(3).exponential_(0), kael.ValueError, "lambda > 0.0"),
        (lambda: kael.empty(3).random_(5, 2), kael.ValueError, "from=5 >= to=2"),
        (lambda: kael.ones(3).expand(2, 3).uniform_(), kael.Error, "uniform_"),
    ],
)
def test_in_place_samplers_refuse_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_drawn_here_counts_the_calling_threads_reservations_only():
    g = kael.Generator()
    g.reserve(5)
    other = threading.Thread(target=lambda: g.reserve(7))
    other.start()
    other.join()
    assert g.drawn_here() == 5 and g.position()[1] == 12


def test_rewind_refuses_once_another_thread_drew_between():
    """A traced op that turns extern gives back its own draws; another thread's counters
    taken meanwhile must never be handed out twice."""
    g = kael.Generator()
    start, before = g.position(), g.drawn_here()
    g.reserve(4)
    assert g.rewind(start, g.drawn_here() - before) and g.position() == start
    g.reserve(4)
    other = threading.Thread(target=lambda: g.reserve(2))
    other.start()
    other.join()
    assert not g.rewind(start, g.drawn_here() - before - 4)
    assert g.position()[1] == 6  # nothing given back: 4 of its own, 2 of the other's


# ---- Tensor.bernoulli and Tensor.multinomial: the methods torch has ------------------------


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.float16], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_bernoulli_method_draws_what_the_function_draws(dtype, layout):
    probs = kael.tensor(np.linspace(0, 1, 24).reshape(4, 6), dtype=dtype)
    probs = {"contiguous": probs, "transposed": probs.mT, "sliced": probs[:, ::2]}[layout]
    first = probs.bernoulli(generator=kael.Generator().manual_seed(5))
    again = kael.bernoulli(probs, generator=kael.Generator().manual_seed(5))
    assert first.dtype is dtype and first.shape == probs.shape
    np.testing.assert_array_equal(first.numpy(), again.numpy())
    assert (
        first[probs == 0].sum().item() == 0
        and first[probs == 1].sum().item() == (probs == 1).sum().item()
    )


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64, kael.bool], ids=str)
@pytest.mark.parametrize("p", [0.0, 0.25, 1.0])
def test_bernoulli_method_with_one_p_keeps_the_tensors_shape_and_dtype(p, dtype):
    t = torch.zeros(
        3,
        5,
        dtype={
            kael.float32: torch.float32,
            kael.float64: torch.float64,
            kael.int64: torch.int64,
            kael.bool: torch.bool,
        }[dtype],
    )
    k = kael.zeros(3, 5, dtype=dtype)
    got, expected = k.bernoulli(p, generator=kael.Generator().manual_seed(1)), t.bernoulli(p)
    assert got.shape == tuple(expected.shape) and str(got.dtype) == str(
        expected.dtype
    ).removeprefix("torch.")
    if p in (0.0, 1.0):
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    np.testing.assert_array_equal(
        got.numpy(), kael.bernoulli(k, p, generator=kael.Generator().manual_seed(1)).numpy()
    )


@pytest.mark.parametrize("replacement", [False, True])
@pytest.mark.parametrize("shape", [(5,), (3, 5)], ids=str)
def test_multinomial_method_draws_what_the_function_draws(shape, replacement):
    weights = kael.tensor(np.arange(1, 1 + int(np.prod(shape)), dtype=np.float64).reshape(shape))
    got = weights.multinomial(4, replacement, generator=kael.Generator().manual_seed(9))
    again = kael.multinomial(
        weights, 4, replacement=replacement, generator=kael.Generator().manual_seed(9)
    )
    expected = torch.ones(shape, dtype=torch.float64).multinomial(4, replacement)
    assert got.shape == tuple(expected.shape) and got.dtype is kael.int64
    np.testing.assert_array_equal(got.numpy(), again.numpy())
    assert got.min().item() >= 0 and got.max().item() < shape[-1]


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.ones(3, dtype=kael.int64).bernoulli(), kael.TypeError, "floating point probabilities, got int64"),
        (lambda: kael.ones(3).bernoulli(1.5), kael.ValueError, "p to be in \\[0, 1\\], but got p=1.5"),
        (lambda: kael.full((3,), 2.0).bernoulli(), kael.ValueError, "got p=2.0 at position \\[0\\]"),
        (lambda: kael.ones(3).bernoulli(generator=3), kael.TypeError, "generator"),
        (lambda: kael.ones(3, dtype=kael.int64).multinomial(1), kael.TypeError, "floating point weights, got int64"),
        (lambda: kael.ones(2, 2, 2).multinomial(1), kael.ValueError, "1-d or 2-d weights, got 3 dims"),
        (lambda: kael.ones(3).multinomial(0), kael.ValueError, "num_samples > 0, got num_samples=0"),
        (lambda: kael.ones(3).multinomial(4), kael.ValueError, "4"),
    ],
)  # fmt: skip
def test_sampling_methods_refuse_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---- torch-level normal, randint_like and the default generator's state --------------------

NORMAL_FORMS = {
    "tensor_tensor": lambda: kael.normal(kael.full((200, 100), 3.0), kael.full((100,), 2.0)),
    "tensor_float": lambda: kael.normal(kael.full((200, 100), 3.0), 2.0),
    "tensor_default_std": lambda: kael.normal(kael.full((200, 100), 3.0)),
    "float_tensor": lambda: kael.normal(3.0, kael.full((200, 100), 2.0)),
    "float_float_size": lambda: kael.normal(3.0, 2.0, (200, 100)),
    "float_float_size_f64": lambda: kael.normal(3.0, 2.0, size=(200, 100), dtype=kael.float64),
}
NORMAL_STD = {"tensor_default_std": 1.0}


@pytest.mark.parametrize("form", list(NORMAL_FORMS))
def test_normal_forms_repeat_under_manual_seed_and_have_the_moments(form):
    kael.manual_seed(11)
    first = NORMAL_FORMS[form]()
    kael.manual_seed(11)
    again = NORMAL_FORMS[form]()
    np.testing.assert_array_equal(np_of(first), np_of(again))
    assert first.shape == (200, 100)
    assert first.dtype is (kael.float64 if form.endswith("f64") else kael.float32)
    values = np_of(first).astype(np.float64).ravel()
    std = NORMAL_STD.get(form, 2.0)
    assert abs(values.mean() - 3.0) < Z * std / math.sqrt(values.size)
    assert abs(values.std() - std) < Z * std / math.sqrt(2 * values.size)


def test_normal_tensor_forms_are_z_times_std_plus_mean_of_randn():
    mean, std = kael.arange(6.0).reshape(2, 3), kael.tensor([0.5, 1.0, 4.0])
    kael.manual_seed(5)
    got = kael.normal(mean, std)
    kael.manual_seed(5)
    z = kael.randn(2, 3)
    np.testing.assert_array_equal(np_of(got), np_of(z.mul_(std).add_(mean)))


@pytest.mark.parametrize(
    ("mean", "std", "dtype"),
    [
        ("f64", "f32", "float64"),  # (Tensor, Tensor): the result takes mean's dtype
        ("f32", "f64", "float32"),
        ("f64", 1.0, "float64"),
        (0.0, "f64", "float64"),
    ],
)
def test_normal_result_dtype_and_shape_follow_torch(mean, std, dtype):
    def make(lib, spec, shape):
        if not isinstance(spec, str):
            return spec
        return lib.zeros(shape, dtype=lib.float64 if spec == "f64" else lib.float32) + 1

    k = kael.normal(make(kael, mean, (3, 1)), make(kael, std, (4,)))
    t = torch.normal(make(torch, mean, (3, 1)), make(torch, std, (4,)))
    assert (k.shape, k.dtype) == (tuple(t.shape), getattr(kael, dtype))
    assert t.dtype == getattr(torch, dtype)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: kael.normal(kael.zeros(3), -1.0), kael.ValueError, "std >= 0.0, but found std -1"),
        (lambda: kael.normal(kael.zeros(3), -kael.ones(3)), kael.ValueError, "all elements of std >= 0.0"),
        (lambda: kael.normal(0.0, kael.tensor([1.0, -2.0])), kael.ValueError, "all elements of std"),
        (lambda: kael.normal(0.0, -1.0, (2,)), kael.ValueError, "found std -1"),
        (lambda: kael.normal(0.0, 1.0), kael.TypeError, "needs a size"),
        (lambda: kael.normal(kael.zeros(3, dtype=kael.int64), 1.0), kael.TypeError, "floating point"),
        (lambda: kael.normal(0, 1, (2,), dtype=kael.int64), kael.TypeError, "floating point dtypes"),
        (lambda: kael.normal(kael.zeros(3), kael.ones(4)), kael.ValueError, "cannot be broadcast"),
        (lambda: kael.normal(kael.zeros(3), 1.0, (3,)), kael.TypeError, "size and dtype only"),
    ],
)  # fmt: skip
def test_normal_refuses_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


RANDINT_LIKE = [
    ((kael.float32,), (10,), kael.float32),
    ((kael.int32,), (-3, 4), kael.int32),
    ((kael.uint8,), (0, 256), kael.uint8),
    ((kael.bool,), (2,), kael.bool),
    ((kael.float32,), (5,), kael.int16),
]


@pytest.mark.parametrize(("source", "bounds", "dtype"), RANDINT_LIKE)
def test_randint_like_keeps_shape_takes_dtype_and_stays_in_range(source, bounds, dtype):
    x = kael.zeros((40, 50), dtype=source[0])
    kwargs = {} if dtype is source[0] else {"dtype": dtype}
    kael.manual_seed(2)
    got = kael.randint_like(x, *bounds, **kwargs)
    kael.manual_seed(2)
    assert kael.equal(got, kael.randint_like(x, *bounds, **kwargs))
    assert (got.shape, got.dtype) == ((40, 50), dtype)
    low, high = (0, *bounds)[-2:]
    values = np_of(got).astype(np.int64)
    assert values.min() == low and values.max() == high - 1  # 2000 draws reach both ends
    assert torch.randint_like(torch.zeros(40, 50, dtype=TORCH_OF[source[0]]), *bounds).shape == (
        40,
        50,
    )


TORCH_OF = {
    kael.float32: torch.float32,
    kael.int32: torch.int32,
    kael.uint8: torch.uint8,
    kael.bool: torch.bool,
}


def test_randint_like_draws_what_randint_draws_and_takes_a_tensor_high():
    kael.manual_seed(9)
    got = kael.randint_like(kael.zeros(3, 4), 7, 19)
    kael.manual_seed(9)
    np.testing.assert_array_equal(np_of(got), np_of(kael.randint(7, 19, (3, 4))).astype(np.float32))
    kael.manual_seed(9)
    np.testing.assert_array_equal(
        np_of(got), np_of(kael.randint_like(kael.zeros(3, 4), 7, kael.tensor(19)))
    )


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: kael.randint_like(kael.zeros(2), 5, 2), kael.ValueError, "from=5 >= to=2"),
        (lambda: kael.randint_like(kael.zeros(2, dtype=kael.uint8), 300), kael.ValueError, "to - 1 is out of bounds for uint8"),
        (lambda: kael.randint_like(kael.zeros(2, dtype=kael.int8), -200, 3), kael.ValueError, "from is out of bounds for int8"),
        (lambda: kael.randint_like(kael.zeros(2), 5, dtype=kael.bool), kael.ValueError, "to - 1 is out of bounds for bool"),
        (lambda: kael.randint_like(kael.zeros(2)), kael.TypeError, "invalid combination of arguments - got \\(Tensor\\)"),
        (lambda: kael.randint_like([0.0], 3), kael.TypeError, "Tensor"),
        (lambda: kael.randint_like(kael.zeros(2), 2.5), kael.TypeError, "got \\(Tensor, float\\)"),
    ],
)  # fmt: skip
def test_randint_like_refuses_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_rng_state_round_trips_so_draws_repeat():
    kael.manual_seed(123)
    kael.rand(7)
    state = kael.get_rng_state()
    assert state.dtype is kael.uint8 and state.ndim == 1
    first = np_of(kael.randn(100))
    kael.rand(3)  # move on
    kael.set_rng_state(state)
    np.testing.assert_array_equal(np_of(kael.randn(100)), first)
    assert kael.initial_seed() == 123


@pytest.mark.parametrize(
    ("state", "error"),
    [
        (kael.zeros(16), kael.TypeError),
        ([0] * 16, kael.TypeError),
        (kael.zeros(3, dtype=kael.uint8), kael.ValueError),
    ],
)
def test_set_rng_state_refuses_what_is_not_a_saved_state(state, error):
    with pytest.raises(error):
        kael.set_rng_state(state)


def test_seed_reseeds_from_entropy_and_reports_the_seed():
    first = kael.seed()
    assert kael.initial_seed() == first and 0 <= first < 2**64
    a = np_of(kael.rand(4))
    kael.manual_seed(first)
    np.testing.assert_array_equal(np_of(kael.rand(4)), a)
    assert kael.seed() != first  # 64 bits of entropy twice alike: odds 2**-64


# ---- poisson ----------------------------------------------------------------------------------


@pytest.mark.parametrize("rate", [0.3, 1.0, 4.5, 9.99, 10.0, 17.0, 150.0, 1e4, 1e7])
def test_poisson_moments_match_the_rate(rate):
    kael.manual_seed(21)
    values = np_of(kael.poisson(kael.full((100_000,), rate, dtype=kael.float64)))
    n = values.size
    assert np.all(values == np.floor(values)) and values.min() >= 0
    assert abs(values.mean() - rate) < Z * math.sqrt(rate / n)
    # the variance's standard error: sqrt((mu4 - sigma^4) / n), mu4 = 3 rate^2 + rate
    assert abs(values.var() - rate) < Z * math.sqrt((2 * rate * rate + rate) / n)


@pytest.mark.parametrize("rate", [2.5, 9.0, 30.0])
def test_poisson_histogram_fits_the_pmf(rate):
    kael.manual_seed(4)
    values = np_of(kael.poisson(kael.full((200_000,), rate))).astype(np.int64)
    top = int(rate + 6 * math.sqrt(rate)) + 1
    pmf = np.array([math.exp(k * math.log(rate) - rate - math.lgamma(k + 1)) for k in range(top)])
    pmf = np.append(pmf, 1.0 - pmf.sum())
    counts = np.bincount(np.minimum(values, top), minlength=top + 1)
    keep = pmf * values.size >= 5  # chi-square needs 5 expected per cell
    expected = pmf[keep] * values.size
    assert chi_square(counts[keep], expected) < chi_square_bound(int(keep.sum()))


def test_poisson_repeats_under_manual_seed_keeps_shape_and_dtype_and_zero_rate_gives_zero():
    rates = kael.tensor([[0.0, 0.5, 3.0], [12.0, 0.0, 400.0]])
    kael.manual_seed(8)
    first = kael.poisson(rates)
    kael.manual_seed(8)
    assert kael.equal(first, kael.poisson(rates))
    assert (first.shape, first.dtype) == ((2, 3), kael.float32)
    assert float(first[0, 0]) == 0.0 and float(first[1, 1]) == 0.0
    strided = kael.poisson(kael.full((4, 6), 2.0, dtype=kael.float64).t())
    assert (strided.shape, strided.dtype) == ((6, 4), kael.float64)
    t = torch.poisson(torch.tensor([[0.0, 0.5, 3.0], [12.0, 0.0, 400.0]]))
    assert first.shape == tuple(t.shape)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: kael.poisson(kael.tensor([1.0, -1.0])), kael.ValueError, "expected rate to be non-negative"),
        (lambda: kael.poisson(kael.tensor([float("nan")])), kael.ValueError, "invalid Poisson rate"),
        (lambda: kael.poisson(kael.tensor([1, 2])), kael.TypeError, "floating point rates, got int64"),
        (lambda: kael.poisson([1.0]), kael.TypeError, "Tensor"),
    ],
)  # fmt: skip
def test_poisson_refuses_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("dtype, high", [("float16", 4096), ("bfloat16", 300)])
def test_randint_like_of_a_half_type_past_its_exact_integers_warns_as_torch(dtype, high):
    # past 2**digits the draws round, which torch only warns about; past the largest
    # finite value it refuses
    with pytest.warns(UserWarning, match="out of bounds"):
        got = kael.randint_like(kael.zeros(3, dtype=getattr(kael, dtype)), high)
    assert got.dtype is getattr(kael, dtype) and got.shape == (3,)
    with pytest.raises(kael.ValueError, match=r"to - 1 is out of bounds .* 69999"):
        kael.randint_like(kael.zeros(3, dtype=kael.float16), 70000)


# ---- randint_like's argument forms and normal's out= ------------------------------------------


def test_randint_like_one_positional_bound_is_high_even_zero():
    """randint_like(x, 0) is high = 0 (an empty range, refused); randint_like(x, 1) draws 0."""
    with pytest.raises(RuntimeError, match="from=0 >= to=0"):
        torch.randint_like(torch.zeros(3), 0)
    with pytest.raises(kael.ValueError, match="from=0 >= to=0"):
        kael.randint_like(kael.zeros(3), 0)
    expected = torch.randint_like(torch.zeros(3), 1)
    np.testing.assert_array_equal(np_of(kael.randint_like(kael.zeros(3), 1)), expected.numpy())


@pytest.mark.parametrize(
    ("args", "kwargs", "span"),
    [((), {"high": 3}, (0, 3)), ((2,), {"high": 5}, (2, 5)), ((), {"low": -1, "high": 1}, (-1, 1))],
)
def test_randint_like_keyword_bounds_draw_as_torch(args, kwargs, span):
    """high by keyword, alone or after a positional or keyword low, as torch takes it."""
    got = kael.randint_like(kael.zeros(400, dtype=kael.int64), *args, **kwargs)
    expected = torch.randint_like(torch.zeros(400, dtype=torch.int64), *args, **kwargs)
    for values in (np_of(got), expected.numpy()):
        assert (values.min(), values.max() + 1) == span  # 400 draws reach both ends


@pytest.mark.parametrize(
    ("args", "kwargs", "got"),
    [((), {"low": 3}, "Tensor, low=int"), ((3,), {"low": 1}, "Tensor, int, low=int")]
    + [((1, 2, 3), {}, "Tensor, int, int, int"), ((), {"low": 0}, "Tensor, low=int")],
)
def test_randint_like_keyword_low_without_high_is_refused_as_torch(args, kwargs, got):
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        torch.randint_like(torch.zeros(3), *args, **kwargs)
    with pytest.raises(kael.TypeError, match=f"invalid combination of arguments - got \\({got}\\)"):
        kael.randint_like(kael.zeros(3), *args, **kwargs)


NORMAL_OUT_FORMS = {
    "tensor_tensor": lambda lib, out: lib.normal(lib.full((3, 4), 2.0), lib.ones(4), out=out),
    "tensor_float": lambda lib, out: lib.normal(lib.full((3, 4), 2.0), 0.5, out=out),
    "float_tensor": lambda lib, out: lib.normal(2.0, lib.ones(3, 4), out=out),
    "float_float": lambda lib, out: lib.normal(2.0, 0.5, (3, 4), out=out),
}


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("form", list(NORMAL_OUT_FORMS))
def test_normal_out_is_filled_and_returned_with_the_draws_of_no_out(form, layout):
    def out_of(lib):
        return lib.empty(3, 4) if layout == "contiguous" else lib.empty(4, 3).t()

    kael.manual_seed(4)
    fresh = NORMAL_OUT_FORMS[form](kael, None)
    kael.manual_seed(4)
    out = out_of(kael)
    got = NORMAL_OUT_FORMS[form](kael, out)
    t_out = out_of(torch)
    expected = NORMAL_OUT_FORMS[form](torch, t_out)
    assert got is out and expected is t_out
    assert (got.shape, got.stride()) == (tuple(expected.shape), expected.stride())
    assert got.dtype is kael.float32 and expected.dtype == torch.float32
    np.testing.assert_array_equal(np_of(got), np_of(fresh))


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
@pytest.mark.parametrize("form", ["tensor_tensor", "float_float"])
def test_normal_out_of_another_floating_dtype_draws_in_its_dtype(form, dtype):
    k = NORMAL_OUT_FORMS[form](kael, kael.empty(3, 4, dtype=getattr(kael, dtype)))
    t = NORMAL_OUT_FORMS[form](torch, torch.empty(3, 4, dtype=getattr(torch, dtype)))
    assert k.dtype is getattr(kael, dtype) and t.dtype == getattr(torch, dtype)
    assert np.isfinite(np_of(k.to(dtype=kael.float64))).all()


def test_normal_out_empty_and_0d_match_torch():
    got = kael.normal(kael.zeros(0), 1.0, out=kael.empty(0))
    assert got.shape == tuple(torch.normal(torch.zeros(0), 1.0, out=torch.empty(0)).shape)
    got = kael.normal(kael.tensor(0.0), kael.tensor(1.0), out=kael.empty(()))
    assert got.shape == tuple(torch.normal(torch.tensor(0.0), torch.tensor(1.0)).shape) == ()


def test_normal_out_aliasing_mean_is_drawn_over_first_as_torch():
    """PyTorch draws z into out and then computes out * std + mean: an out that is mean gives
    z * std + z, near 0 for a tiny std, not near the old mean."""
    for lib in (kael, torch):
        mean = lib.full((50,), 100.0)
        got = lib.normal(mean, lib.full((50,), 1e-3), out=mean)
        assert float(got.abs().max()) < 0.1


@pytest.mark.parametrize(
    ("call", "torch_call", "error", "message"),
    [
        (lambda: kael.normal(0.0, 1.0, (2,), out=kael.empty(2, dtype=kael.int64)),
         lambda: torch.normal(0.0, 1.0, (2,), out=torch.empty(2, dtype=torch.int64)),
         kael.TypeError, "floating point dtypes, got int64"),
        (lambda: kael.normal(kael.zeros(2), kael.ones(2), out=kael.empty(2, dtype=kael.int32)),
         lambda: torch.normal(torch.zeros(2), torch.ones(2), out=torch.empty(2, dtype=torch.int32)),
         kael.TypeError, "floating point dtypes, got int32"),
        (lambda: kael.normal(0.0, 1.0, (2,), dtype=kael.float64, out=kael.empty(2)),
         lambda: torch.normal(0.0, 1.0, (2,), dtype=torch.float64, out=torch.empty(2)),
         kael.TypeError, "dtype float64 does not match dtype of out parameter \\(float32\\)"),
        (lambda: kael.normal(0.0, 1.0, (2, 3), out=kael.empty(1, 3).expand(2, 3)),
         lambda: torch.normal(0.0, 1.0, (2, 3), out=torch.empty(1, 3).expand(2, 3)),
         kael.Error, "more than one element of the written-to tensor"),
        (lambda: kael.normal(kael.zeros(2, 3), 1.0, out=kael.empty(1, 3).expand(2, 3)),
         lambda: torch.normal(torch.zeros(2, 3), 1.0, out=torch.empty(1, 3).expand(2, 3)),
         kael.Error, "more than one element of the written-to tensor"),
        (lambda: kael.normal(kael.zeros(2), 1.0, out=[0.0, 0.0]),
         lambda: torch.normal(torch.zeros(2), 1.0, out=[0.0, 0.0]),
         kael.TypeError, "out must be a Tensor, got list"),
        (lambda: kael.normal(kael.zeros(2), -1.0, out=kael.empty(2)),
         lambda: torch.normal(torch.zeros(2), -1.0, out=torch.empty(2)),
         kael.ValueError, "std >= 0.0, but found std -1"),
    ],
)  # fmt: skip
def test_normal_out_refuses_what_torch_refuses(call, torch_call, error, message):
    with pytest.raises((RuntimeError, NotImplementedError, TypeError)):
        torch_call()
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("shape", [(5,), (3, 4, 1), (0,)])
def test_normal_out_of_another_shape_is_resized_as_torch_does(shape):
    """torch resizes an out of another shape, warning when it held elements; so does kael."""
    resized_out(lambda o: kael.normal(kael.zeros(3, 4), kael.ones(3, 4), out=o),
                kael.empty(shape), (3, 4))  # fmt: skip
    resized_out(lambda o: kael.normal(0.0, 1.0, (3, 4), out=o), kael.empty(shape), (3, 4))


# ---- randint_like's bounds: None, tensors of other dtypes, as torch's overloads take them ----


def _bounds_of(lib, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A case's bounds in `lib`: each (value, dtype name) pair a 0-d or n-d tensor."""

    def make(v):
        return lib.tensor(v[0], dtype=getattr(lib, v[1])) if isinstance(v, tuple) else v

    return tuple(make(v) for v in args), {k: make(v) for k, v in kwargs.items()}


def _like_draws(lib, args: tuple, kwargs: dict, dtype: str = "int64"):
    """randint_like of a 400-element zeros of `dtype` with a case's bounds, in `lib`."""
    a, k = _bounds_of(lib, args, kwargs)
    return lib.randint_like(lib.zeros(400, dtype=getattr(lib, dtype)), *a, **k)


def _refused_like_torch(args, kwargs, got: str) -> None:
    """randint_like's arguments refused by torch's overload check and by kael's, naming them."""
    both_refuse(lambda: _like_draws(torch, args, kwargs), lambda: _like_draws(kael, args, kwargs),
                TypeError, kael.TypeError, f"invalid combination of arguments - got \\({got}\\)")  # fmt: skip


@pytest.mark.parametrize(
    ("args", "kwargs", "got"),
    [((), {"low": None, "high": 10}, "Tensor, low=NoneType, high=int"),
     ((None, 10), {}, "Tensor, NoneType, int"), ((10, None), {}, "Tensor, int, NoneType"),
     ((None,), {}, "Tensor, NoneType"), ((), {"high": None}, "Tensor, high=NoneType"),
     ((5,), {"high": None}, "Tensor, int, high=NoneType"),
     ((), {"low": 0, "high": None}, "Tensor, low=int, high=NoneType"),
     (((2.5, "float32"),), {"high": None}, "Tensor, Tensor, high=NoneType"),
     ((), {"low": None, "high": (2.5, "float32")}, "Tensor, low=NoneType, high=Tensor")],
)  # fmt: skip
def test_randint_like_explicit_none_bound_is_refused(args, kwargs, got):
    _refused_like_torch(args, kwargs, got)


LONE_TENSOR_HIGHS = [(2.5, "float32"), (2.5, "float64"), (1.5, "float32"), (3.99, "float32")]
LONE_TENSOR_HIGHS += [(True, "bool"), (3, "int64"), (3, "int8"), (3, "uint8")]
LONE_TENSOR_HIGHS += [(3.7, "float16"), (3.7, "bfloat16")]


@pytest.mark.parametrize("high", LONE_TENSOR_HIGHS, ids=str)
@pytest.mark.parametrize("by_keyword", [False, True], ids=["positional", "keyword"])
def test_randint_like_lone_0d_tensor_high_of_any_dtype_is_truncated(high, by_keyword):
    """torch's Tensor high overload takes high.item<int64_t>(): 2.5 -> 2, True -> 1."""
    args, kwargs = ((), {"high": high}) if by_keyword else ((high,), {})
    expected = _like_draws(torch, args, kwargs).numpy()
    kael.manual_seed(5)
    got = _like_draws(kael, args, kwargs)
    kael.manual_seed(5)
    same = kael.randint_like(kael.zeros(400, dtype=kael.int64), int(high[0]))
    np.testing.assert_array_equal(np_of(got), np_of(same))
    assert got.dtype is kael.int64 and got.shape == tuple(expected.shape)
    span = (np_of(got).min(), np_of(got).max())
    assert span == (expected.min(), expected.max()) == (0, int(high[0]) - 1)


@pytest.mark.parametrize(
    ("high", "to"),
    [((-2.5, "float32"), -2), ((0.5, "float32"), 0), ((-0.5, "float64"), 0)]
    + [((False, "bool"), 0), ((2.0**63, "float64"), -(2**63)), ((-(2.0**63), "float64"), -(2**63))],
    ids=str,
)
def test_randint_like_lone_tensor_high_truncating_to_at_most_0_is_refused(high, to):
    message = f"expects 'from' to be less than 'to', but got from=0 >= to={to}$"
    with pytest.raises(RuntimeError, match=message):
        _like_draws(torch, (high,), {})
    with pytest.raises(kael.ValueError, match=message):
        _like_draws(kael, (high,), {})


@pytest.mark.parametrize("high", [float("nan"), float("inf"), -float("inf"), 1e30], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_randint_like_lone_tensor_high_beyond_int64_is_refused(high, dtype):
    message = "value cannot be converted to type int64_t without overflow"
    with pytest.raises(RuntimeError, match=message):
        _like_draws(torch, ((high, dtype),), {})
    stored = float(np.dtype(dtype).type(high))  # 1e30 as float32 holds it
    with pytest.raises(kael.ValueError, match=re.escape(f"{message}: high = {stored}")):
        _like_draws(kael, ((high, dtype),), {})


def test_randint_like_lone_tensor_high_just_inside_int64_is_taken():
    high = ((2.0**62, "float64"),)
    got, expected = _like_draws(kael, high, {}), _like_draws(torch, high, {})
    assert got.dtype is kael.int64 and expected.dtype is torch.int64
    assert np_of(got).min() >= 0 and np_of(got).max() < 2**62
    assert expected.min().item() >= 0 and expected.max().item() < 2**62


@pytest.mark.parametrize(
    ("high", "shape"),
    [(([3], "int64"), "[1]"), (([[3]], "int64"), "[1, 1]"), (([3.5], "float32"), "[1]")]
    + [(([], "float32"), "[0]")],
    ids=str,
)
def test_randint_like_lone_tensor_high_must_be_0d(high, shape):
    message = "high must be a scalar tensor and on CPU"
    with pytest.raises(RuntimeError, match=message):
        _like_draws(torch, (high,), {})
    with pytest.raises(kael.ValueError, match=f"{message}, got shape \\{shape[:-1]}\\] on cpu$"):
        _like_draws(kael, (high,), {})


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [(((1, "int64"), 5), {}), ((1, (5, "int64")), {}), (((1, "int64"), (5, "int64")), {})]
    + [((([1], "int64"), 5), {}), ((1, ([[5]], "int64")), {}), (((1, "int8"), (5, "uint8")), {})]
    + [((), {"low": (1, "int64"), "high": 5}), ((), {"low": 1, "high": (5, "int32")})]
    + [(((1, "int16"),), {"high": 5})],
    ids=str,
)
def test_randint_like_int_bounds_take_one_element_integer_tensors(args, kwargs):
    expected = _like_draws(torch, args, kwargs).numpy()
    got = np_of(_like_draws(kael, args, kwargs))
    assert (got.min(), got.max()) == (expected.min(), expected.max()) == (1, 4)


@pytest.mark.parametrize(
    ("args", "kwargs", "got"),
    [(((1.0, "float32"), 5), {}, "Tensor, Tensor, int"), ((1, (2.5, "float32")), {}, "Tensor, int, Tensor"),
     ((), {"low": 1, "high": (2.5, "float64")}, "Tensor, low=int, high=Tensor"),
     ((), {"low": (1.5, "float32"), "high": 5}, "Tensor, low=Tensor, high=int"),
     ((([1, 2], "int64"), 5), {}, "Tensor, Tensor, int"), ((([], "int64"), 5), {}, "Tensor, Tensor, int"),
     ((1, 2.5), {}, "Tensor, int, float"), ((1.0, 3), {}, "Tensor, float, int"),
     ((1, True), {}, "Tensor, int, bool"), ((True,), {}, "Tensor, bool"), (("3",), {}, "Tensor, str")],
)  # fmt: skip
def test_randint_like_int_bounds_refuse_floats_and_multi_element_tensors(args, kwargs, got):
    _refused_like_torch(args, kwargs, got)


@pytest.mark.parametrize(
    ("args", "kwargs"), [(((True, "bool"), 5), {}), ((0, (True, "bool")), {})], ids=str
)
def test_randint_like_int_bounds_refuse_bool_tensors(args, kwargs):
    """torch's parser lets a bool tensor through as an int, then fails an internal assert;
    kael refuses it as any other non-integer bound."""
    with pytest.raises(RuntimeError):
        _like_draws(torch, args, kwargs)
    with pytest.raises(kael.TypeError, match="invalid combination of arguments"):
        _like_draws(kael, args, kwargs)


@pytest.mark.parametrize(
    "n, dtype",
    [(128, "int8"), (129, "int8"), (256, "uint8"), (257, "uint8"), (32768, "int16"),
     (32769, "int16"), (2049, "float16"), (2050, "float16"), (300, "bfloat16")],
)  # fmt: skip
def test_randperm_refuses_a_length_whose_values_dtype_cannot_hold_as_torch(n, dtype):
    try:
        want = torch.randperm(n, dtype=getattr(torch, dtype))
    except RuntimeError as e:
        with pytest.raises(kael.ValueError, match=re.escape(str(e))):
            kael.randperm(n, dtype=getattr(kael, dtype))
        return
    got = kael.randperm(n, dtype=getattr(kael, dtype))
    assert got.dtype is getattr(kael, dtype) and got.shape == (n,)
    np.testing.assert_array_equal(got.sort().values.float().numpy(), want.sort().values.float())


@pytest.mark.parametrize(
    ("dtype", "args", "low", "high"),
    [
        ("uint8", (3, None), 3, 255),  # random_(from, None): from `from` to the dtype's top
        ("uint8", (7,), 0, 6),  # random_(to)
        ("uint8", (), 0, 255),
        ("int8", (-5, 5), -5, 4),
        ("int64", (-(2**63), None), -(2**63), 2**63 - 1),  # the whole range: 2**64 values
    ],
)
def test_random_forms_draw_torchs_ranges(dtype, args, low, high):
    got = kael.zeros(4000, dtype=getattr(kael, dtype)).random_(*args)
    want = torch.zeros(4000, dtype=getattr(torch, dtype)).random_(*args)
    for t in (got, want):
        assert low <= t.min().item() and t.max().item() <= high
    if dtype == "int64":  # the whole range was filled with -2**63 (its span wrapped to 0)
        assert got.min().item() < -(2**61) and got.max().item() > 2**61


def test_random_refuses_a_to_beyond_int64():
    with pytest.raises(ValueError, match="Overflow"):
        torch.zeros(5, dtype=torch.int64).random_(-(2**63), 2**63)
    with pytest.raises(kael.ValueError, match="out of the range of int64"):
        kael.zeros(5, dtype=kael.int64).random_(-(2**63), 2**63)


@pytest.mark.parametrize(("dtype", "low", "high"), [("float16", 0, 1), ("bfloat16", -3, 3),
                                                     ("bfloat16", -3, -1), ("float32", 0, 1)])  # fmt: skip
def test_uniform_never_reaches_its_exclusive_bound(dtype, low, high):
    """Draws made in float64 rounded up to `high` in the half types (44 in 200000)."""
    got = kael.empty(200000, dtype=getattr(kael, dtype)).uniform_(low, high).double()
    assert got.max().item() < high and got.min().item() >= low


def test_multinomial_follows_vmaps_randomness_modes():
    weights = kael.ones(3, 40)

    def draw(row):
        return kael.multinomial(row, 4, replacement=True)

    with pytest.raises(kael.Error, match="randomness error mode"):
        kael.vmap(draw)(weights)
    same = kael.vmap(draw, randomness="same")(weights)
    assert all(kael.equal(same[0], row) for row in same)
    different = kael.vmap(draw, randomness="different")(weights)
    assert not all(kael.equal(different[0], row) for row in different)


def test_a_compiled_functions_draws_follow_vmaps_error_and_different_modes():
    @kael.compile
    def noisy(x):
        return x + kael.rand(x.shape)

    rows = kael.zeros(3, 4)
    noisy(rows[0])  # traced: later calls replay the plan's reservation step
    with pytest.raises(kael.Error, match="randomness error mode"):
        kael.vmap(noisy)(rows)
    drawn = kael.vmap(noisy, randomness="different")(rows)
    assert not kael.equal(drawn[0], drawn[1])


@pytest.mark.parametrize("kwargs", [{"training": False}, {"p": 0.0}])
def test_dropout_that_draws_no_mask_returns_an_integer_input_as_torch(kwargs):
    x = kael.tensor([1, 2])
    assert kael.nn.functional.dropout(x, **kwargs) is x
    with pytest.raises(kael.TypeError, match="expected a floating point input, got int64"):
        kael.nn.functional.dropout(x)  # torch: its float result cannot go to int64


def test_a_generator_pickles_and_saves_at_its_position_as_torchs():
    import copy
    import io
    import pickle

    g = kael.Generator().manual_seed(5)
    kael.rand(3, generator=g)
    buffer = io.BytesIO()
    kael.save({"g": g}, buffer)
    buffer.seek(0)
    copies = [pickle.loads(pickle.dumps(g)), copy.deepcopy(g)]
    copies.append(kael.load(buffer, weights_only=False)["g"])
    want = kael.rand(2, generator=g).tolist()
    for made in copies:
        assert made is not g and kael.rand(2, generator=made).tolist() == want


def test_multinomial_of_float64_weights_summing_past_the_largest_double():
    """Each row whose weights could overflow their running sum is scaled by a power of two
    first: the draw stays proportional (it picked the last positive class every time)."""
    weights = kael.tensor([1e308, 1e308, 1.0], dtype=kael.float64).expand(4000, 3).contiguous()
    counts = np.bincount(kael.multinomial(weights, 1).flatten().numpy(), minlength=3)
    assert counts[2] == 0 and abs(counts[0] - 2000) < 200
    rows = kael.tensor([[1.7e308, 1.7e308, 0.0], [1.0, 0.0, 3.0]], dtype=kael.float64)
    drawn = kael.multinomial(rows, 4000, replacement=True).numpy()
    assert abs((drawn[0] == 0).mean() - 0.5) < 0.05 and not (drawn[0] == 2).any()
    assert abs((drawn[1] == 2).mean() - 0.75) < 0.05 and not (drawn[1] == 1).any()
    tiny_beside_huge = kael.tensor([1.7e308, 1e-300, 0.0], dtype=kael.float64)
    assert sorted(kael.multinomial(tiny_beside_huge, 2).tolist()) == [0, 1]


@pytest.mark.parametrize(
    ("weights", "samples"),
    [
        ([1e308, 1e-310], 2),
        ([1.7e308, 1.7e308, 5e-324], 3),
        ([1.7e308, 5e-324, 1e-320], 3),
        ([[1e308, 2.0**-1070], [1.0, 3.0]], 2),
    ],
)
def test_multinomial_scaling_keeps_tiny_positive_weights_drawable(weights, samples):
    """A row scaled down to keep its sum finite keeps every positive weight positive: without
    replacement torch draws each class once, and so does kael."""
    expected = torch.multinomial(torch.tensor(weights, dtype=torch.float64), samples)
    got = kael.multinomial(kael.tensor(weights, dtype=kael.float64), samples)
    assert got.dtype == kael.int64 and tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_array_equal(np.sort(got.numpy(), -1), np.sort(expected.numpy(), -1))
    huge = kael.tensor(weights, dtype=kael.float64)
    with pytest.raises(kael.ValueError, match=f"num_samples={samples + 1} from {samples} positive"):
        kael.multinomial(huge, samples + 1)
    drawn = kael.multinomial(huge, 50, replacement=True).numpy()
    assert set(np.unique(drawn)) <= {0, 1}  # beside a huge weight a tiny one is never drawn


def test_multinomial_scaling_keeps_tiny_negative_weights_refused():
    """A negative weight that scaling would flush to -0.0 is refused, as torch refuses it,
    and the message names the weight given, not the scaled one."""
    weights = [1e308, -5e-324]
    both_refuse(
        lambda: torch.multinomial(torch.tensor(weights, dtype=torch.float64), 1),
        lambda: kael.multinomial(kael.tensor(weights, dtype=kael.float64), 1),
        RuntimeError,
        kael.ValueError,
        r"non-negative weights, got -5e-324 at position \[1\]",
    )
    with pytest.raises(kael.ValueError, match=r"got -1.0 at position \[1\]"):
        kael.multinomial(kael.tensor([1e308, -1.0], dtype=kael.float64), 1)


@pytest.mark.parametrize(
    ("dtype", "low", "high", "message"),
    [
        (kael.float16, -7e4, 0.0, "from is out of bounds for float16"),
        (kael.float16, 0.0, 1e5, "to is out of bounds for float16"),
        (kael.float32, -1e39, 0.0, "from is out of bounds for float32"),
        (kael.float32, -3e38, 3e38, "to-from <= the largest float32"),
        (kael.float64, -1.7e308, 1.7e308, "to-from <= the largest float64"),
        (kael.float16, -65504.0, 1.0, "to-from <= the largest float16"),
    ],
)
def test_uniform_refuses_bounds_past_the_dtype_as_torch(dtype, low, high, message):
    torch_dtype = getattr(torch, str(dtype))
    with pytest.raises(RuntimeError, match="out of bounds|to-from"):
        torch.zeros(3, dtype=torch_dtype).uniform_(low, high)
    x = kael.zeros(3, dtype=dtype)
    with pytest.raises(kael.ValueError, match=message):
        x.uniform_(low, high)
    assert x.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
def test_uniform_up_to_the_dtypes_ends_stays_finite(dtype):
    largest = kael.finfo(dtype).max
    x = kael.zeros(20000, dtype=dtype).uniform_(-largest, 0.0)
    assert bool(x.isfinite().all()) and float(x.max()) <= 0.0


@pytest.mark.parametrize("dtype", [kael.complex64, kael.complex128], ids=str)
def test_complex_uniform_and_normal_draw_each_part_as_torch(dtype):
    """uniform_ draws both parts in [from, to); normal_ draws each N(mean, std^2 / 2), the
    mean added to both (torch's complex normal_); a strided view is written in place."""
    x = kael.zeros(200000, dtype=dtype).uniform_(2.0, 3.0)
    for part in (x.real, x.imag):
        assert float(part.min()) >= 2.0 and float(part.max()) < 3.0
        assert abs(float(part.mean()) - 2.5) < 0.01
    z = kael.zeros(200000, dtype=dtype).normal_(1.0, 2.0)
    for part in (z.real, z.imag):
        assert abs(float(part.mean()) - 1.0) < 0.02
        assert abs(float(part.std()) - math.sqrt(2.0)) < 0.02
    grid = kael.zeros(6, 4, dtype=dtype)
    grid[:, 1:3].uniform_(5.0, 6.0)
    assert float(grid[:, 0].abs().max()) == 0.0 and float(grid[:, 3].abs().max()) == 0.0
    assert float(grid[:, 1:3].real.min()) >= 5.0 and float(grid[:, 1:3].imag.min()) >= 5.0


@pytest.mark.parametrize("name", ["rand_like", "randn_like"])
def test_rand_like_and_randn_like_take_a_generator(name):
    draw = getattr(kael, name)
    a = draw(kael.zeros(5), generator=kael.Generator().manual_seed(4))
    b = draw(kael.zeros(5), generator=kael.Generator().manual_seed(4))
    assert kael.equal(a, b)
    assert not kael.equal(a, draw(kael.zeros(5), generator=kael.Generator().manual_seed(5)))
    getattr(torch, name)(torch.zeros(5), generator=torch.Generator().manual_seed(4))


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((), {"high": 10, "size": (3,)}), ((10,), {"size": (3,)}), ((2,), {"high": 10, "size": (3,)})],
)
def test_randint_takes_high_and_size_as_keywords_as_torch(args, kwargs):
    shape = tuple(torch.randint(*args, **kwargs).shape)
    got = kael.randint(*args, **kwargs)
    assert got.shape == shape and got.dtype is kael.int64
    assert int(got.min()) >= (args[0] if len(args) and "high" in kwargs else 0)
    assert int(got.max()) < 10


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_sized_creation_takes_size_as_a_keyword_as_torch(name):
    """size= as torch's parser takes it; no size at all is kael's 0-d tensor (torch refuses
    it: kael.zeros(*shape) serves every shape)."""
    assert getattr(kael, name)(size=(2, 3)).shape == tuple(getattr(torch, name)(size=(2, 3)).shape)
    assert getattr(kael, name)(()).shape == getattr(kael, name)().shape == ()
    with pytest.raises(kael.TypeError, match="both as arguments and as size="):
        getattr(kael, name)(2, size=(2, 3))


def test_normal_of_floats_needs_a_size_tuple_as_torch():
    with pytest.raises(TypeError):
        torch.normal(0.0, 1.0, 3)
    with pytest.raises(kael.TypeError, match="size must be a tuple of ints, got int"):
        kael.normal(0.0, 1.0, 3)
    assert kael.normal(0.0, 1.0, (3,)).shape == (3,)


@pytest.mark.parametrize(
    "draw",
    [
        lambda g: kael.randn(4, 16, generator=g),
        lambda g: kael.rand(3, 5, dtype=kael.float64, generator=g),
        lambda g: kael.randint(0, 10, (2, 33), generator=g),
        lambda g: kael.nn.functional.dropout(kael.ones(5, 7), 0.3),
        lambda g: kael.empty(6, 4).normal_(1.0, 2.0, generator=g),
    ],
    ids=["randn", "rand_float64", "randint", "dropout", "normal_"],
)
def test_small_fills_replayed_by_the_door_draw_the_full_doors_values(draw):
    """A small fill's launch is remembered after its first call and replayed with the
    call's addresses and counters: the same values, call after call, as the full door's
    from the same generator state (the door emptied and closed for the second series)."""

    def series():
        kael.manual_seed(11)
        g = kael.Generator().manual_seed(5)
        return [draw(g) for _ in range(4)]

    saved, kept = kr._DOOR_MAX, dict(kr._DOOR)
    kr._DOOR.clear()
    try:
        served = series()
        assert any(v is not kr._UNSERVED for v in kr._DOOR.values())
        kr._DOOR.clear()
        kr._DOOR_MAX = 0
        full = series()
        assert not kr._DOOR
    finally:
        kr._DOOR_MAX = saved
        kr._DOOR.clear()
        kr._DOOR.update(kept)
    for a, b in zip(served, full, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(served[0].numpy(), served[1].numpy())


def test_fill_door_keys_a_float_scalar_by_its_bits():
    """-0.0 == 0.0 to a dict: normal_(-0.0, 0.0) after normal_(0.0, 0.0) must draw with
    its own mean, -0.0 plus 0 times each draw (-0.0 where the draw is negative), as the
    full door does."""
    x = kael.empty(64)
    x.normal_(0.0, 0.0)  # kept with a mean of +0.0
    assert not np.signbit(x.numpy()).any()
    kael.manual_seed(21)
    x.normal_(-0.0, 0.0)
    served = np.signbit(x.numpy())
    saved, kr._DOOR_MAX = kr._DOOR_MAX, 0
    kept = dict(kr._DOOR)
    kr._DOOR.clear()
    try:
        kael.manual_seed(21)
        x.normal_(-0.0, 0.0)
    finally:
        kr._DOOR_MAX = saved
        kr._DOOR.update(kept)
    np.testing.assert_array_equal(served, np.signbit(x.numpy()))
    assert served.any() and not served.all()
