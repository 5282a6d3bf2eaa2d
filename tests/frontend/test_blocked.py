"""The blocked drivers of one large matrix (frontend/blocked.py) against LAPACK through
PyTorch: the LU, and triangular solves in each orientation, a lower triangular right-hand
side's zero blocks skipped."""

import numpy as np
import pytest
import torch
from kernel_helpers import ahead_and_one_at_a_time

import kael
from kael.frontend import blocked

N = blocked.MIN_BLOCKED + blocked.BLOCK + 5  # several panels and a ragged last one


def _triangle(lower: bool) -> np.ndarray:
    a = np.random.default_rng(N).standard_normal((N, N)) / N + np.eye(N)  # well conditioned
    return np.tril(a) if lower else np.triu(a)


@pytest.mark.parametrize("lower, trans", [(True, False), (False, False), (True, True)])
@pytest.mark.parametrize("unit", [False, True])
def test_triangular_solve_matches_lapack(lower, trans, unit):
    t = _triangle(lower)
    b = np.random.default_rng(1).standard_normal((N, 70))
    x = kael.tensor(b.copy())
    blocked.solve(kael.tensor(t), x, lower=lower, unit=unit, trans=trans)
    want = torch.linalg.solve_triangular(
        torch.tensor(t.T if trans else t), torch.tensor(b), upper=lower == trans, unitriangular=unit
    )
    np.testing.assert_allclose(x.numpy(), want.numpy(), rtol=1e-10, atol=1e-10)


def test_a_lower_right_hand_side_skips_its_zero_blocks_and_gives_the_inverse(monkeypatch):
    t = _triangle(True)
    x = kael.eye(N, dtype=kael.float64)
    calls = []
    product = blocked._subtract
    monkeypatch.setattr(
        blocked, "_subtract", lambda c, a, b: calls.append(c.shape[-1]) or product(c, a, b)
    )
    blocked.solve(kael.tensor(t), x, lower=True, unit=True, lower_rhs=True)
    unit = np.tril(t, -1) + np.eye(N)
    np.testing.assert_allclose(x.numpy(), np.linalg.inv(unit), rtol=1e-10, atol=1e-12)
    assert np.triu(x.numpy(), 1).max() == 0  # still lower triangular
    # each block row's product covers only the solved rows' nonzero columns: those left
    # of its own diagonal block
    assert calls == list(range(blocked.BLOCK, N, blocked.BLOCK))


def test_a_lower_right_hand_side_is_only_for_forward_solves():
    with pytest.raises(AssertionError):
        blocked.solve(kael.eye(N), kael.eye(N), lower=False, lower_rhs=True)


@pytest.mark.parametrize("batch", [(), (1,), (1, 1)])
@pytest.mark.parametrize("n", [N, 256])  # a ragged last panel; rows of 2 KiB, padded
def test_inverse_of_one_large_matrix_has_torchs_values_and_strides(batch, n):
    """getri's column interchanges, gathered as rows of X^T: the column-major result
    torch's LAPACK writes, for unit batch dims too."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal((*batch, n, n))  # pivots interchange many rows
    got, want = kael.linalg.inv(kael.tensor(a)), torch.linalg.inv(torch.tensor(a))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-8, atol=1e-8)
    assert got.stride() == want.stride() and got.shape == tuple(want.shape)


@pytest.mark.parametrize(
    "rhs, left",
    [((N,), True), ((N, 1), True), ((N, 64), True), ((1, N, 70), True), ((N, 1), False),
     ((N, 64), False), ((1, N, 70), False)],
)  # fmt: skip
def test_one_large_solve_takes_its_right_hand_sides_through_the_factorization(rhs, left):
    """[A | B] factored as one matrix: B's columns take the interchanges and products of
    every panel (L^-1 P B), then one backward solve; the values torch's getrs gives."""
    rng = np.random.default_rng(len(rhs))
    a = rng.standard_normal((N, N))
    b = rng.standard_normal(rhs)
    if not left:
        b = np.swapaxes(b, -1, -2).copy()  # X A = B: B's columns are A's size
    got = kael.linalg.solve(kael.tensor(a), kael.tensor(b), left=left)
    want = torch.linalg.solve(torch.tensor(a), torch.tensor(b), left=left)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-9)
    assert got.shape == tuple(want.shape) and got.stride() == want.stride()


def test_one_large_singular_solve_reports_lapacks_info():
    a = np.random.default_rng(3).standard_normal((N, N))
    a[:, 150] = 0  # singular: a zero pivot in the third panel
    b = np.ones((N, 2))
    got = kael.linalg.solve_ex(kael.tensor(a), kael.tensor(b))
    want = torch.linalg.solve_ex(torch.tensor(a), torch.tensor(b))
    assert got.info.item() == want.info.item() > 0
    with pytest.raises(kael.linalg.LinAlgError, match="singular"):
        kael.linalg.solve(kael.tensor(a), kael.tensor(b))


def test_look_ahead_gives_the_sequential_bits(monkeypatch):
    """The next panel factored beside the rest of the trailing product (and its row
    interchanges applied after both) gives the bits of the schedule one launch at a time,
    on two threads: no launch reads what the other writes."""
    rng = np.random.default_rng(8)
    a = rng.standard_normal((3 * blocked.BLOCK + 37, 3 * blocked.BLOCK + 40))  # 3 rhs columns
    n = a.shape[0]

    def factor() -> tuple[np.ndarray, np.ndarray]:
        x = kael.tensor(a.copy())
        piv, info = kael.empty(n, dtype=kael.int64), kael.zeros(1, dtype=kael.int64)
        blocked.lu(x, piv, info)
        return x.numpy(), piv.numpy()

    ahead, sequential = ahead_and_one_at_a_time(factor, monkeypatch)
    np.testing.assert_array_equal(ahead[1], sequential[1])
    np.testing.assert_array_equal(ahead[0].view(np.uint64), sequential[0].view(np.uint64))
    want = torch.linalg.lu_factor(torch.tensor(a[:, :n])).pivots.numpy() - 1
    np.testing.assert_array_equal(ahead[1], want)


@pytest.mark.parametrize("op", ["det", "inv", "solve"])
def test_a_large_factorization_frees_its_memory_without_a_garbage_collection(op):
    """The blocked drivers hold no reference cycle: their working copies go back to the
    allocator when the call returns (a recursive LU written as a nested closure kept
    4.7 MB a call alive, and every call then copied into fresh pages: det 2.9 -> 9.5 ms)."""
    import gc

    a = kael.tensor(np.random.default_rng(4).standard_normal((N, N)))
    args = (a, kael.ones(N, 3, dtype=kael.float64)) if op == "solve" else (a,)
    fn = getattr(kael.linalg, op)
    fn(*args)
    gc.collect()
    gc.disable()
    try:
        before = kael.memory_stats()["in_use_bytes"]
        result = fn(*args)
        del result
        assert kael.memory_stats()["in_use_bytes"] == before
    finally:
        gc.enable()
