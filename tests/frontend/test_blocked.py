"""The blocked drivers of one large matrix (frontend/blocked.py) against LAPACK through
PyTorch: the LU, and triangular solves in each orientation, a lower triangular right-hand
side's zero blocks skipped."""

import numpy as np
import pytest
import torch
from kernel_helpers import ahead_and_one_at_a_time

import kael
from kael.codegen.cpu import program
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
    corners = []  # (row, column) of each product's C block
    moved = blocked._Product.moved

    def record(product, step):
        shifted = moved(product, step)
        offset = (shifted.addresses[2] - x.data_ptr()) // 8
        corners.append(divmod(offset, N))
        return shifted

    monkeypatch.setattr(blocked._Product, "moved", record)
    blocked.solve(kael.tensor(t), x, lower=True, unit=True, lower_rhs=True)
    unit = np.tril(t, -1) + np.eye(N)
    np.testing.assert_allclose(x.numpy(), np.linalg.inv(unit), rtol=1e-10, atol=1e-12)
    assert np.triu(x.numpy(), 1).max() == 0  # still lower triangular
    # each block row's products cover only the solved rows' nonzero columns: those left
    # of its own diagonal block, a column block each
    want = [(i0, c0) for i0 in range(0, N, blocked.BLOCK) for c0 in range(0, i0, blocked.BLOCK)]
    assert sorted(corners) == want


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
    4.7 MB a call alive, and every call then copied into fresh pages: det 2.9 -> 9.5 ms),
    and a second call runs the programs the first built (program.py: its working copies
    come back at the same addresses), holding nothing more."""
    import gc

    a = kael.tensor(np.random.default_rng(4).standard_normal((N, N)))
    args = (a, kael.ones(N, 3, dtype=kael.float64)) if op == "solve" else (a,)
    fn = getattr(kael.linalg, op)
    program.clear()
    fn(*args)
    kept = set(map(id, program.kept()))
    assert kept  # every blocked step was a prepared launch
    gc.collect()
    gc.disable()
    try:
        before = kael.memory_stats()["in_use_bytes"]
        result = fn(*args)
        del result
        assert kael.memory_stats()["in_use_bytes"] == before
        assert set(map(id, program.kept())) == kept  # the same programs, none built again
    finally:
        gc.enable()


def test_without_lower_u_and_the_pivots_are_the_same_and_l_misses_later_interchanges():
    """lower=False (solve, det) skips L's deferred interchanges: U, the pivots and info are
    the same bits, and L is the full L before its rows take the later panels' swaps."""
    a = np.random.default_rng(6).standard_normal((N, N))

    def factor(lower: bool):
        x = kael.tensor(a.copy())
        piv, info = kael.empty(N, dtype=kael.int64), kael.zeros(1, dtype=kael.int64)
        blocked.lu(x, piv, info, lower=lower)
        return x.numpy(), piv.numpy(), info.item()

    (full, piv, info), (part, piv2, info2) = factor(True), factor(False)
    np.testing.assert_array_equal(np.triu(full), np.triu(part))
    assert (piv == piv2).all() and info == info2 == 0
    lower = np.tril(part, -1)
    for j in range(blocked.BLOCK, N, blocked.BLOCK):  # column block k takes rows' swaps from j on
        columns = slice(0, j)
        for k in range(j, min(j + blocked.BLOCK, N)):
            lower[[k, piv[k]], columns] = lower[[piv[k], k], columns]
    np.testing.assert_array_equal(lower, np.tril(full, -1))


@pytest.mark.parametrize(
    "k, lower_rhs, want",
    [(1, False, [(0, 1)]), (32, False, [(0, 32)]), (64, False, [(0, 32), (32, 64)]),
     (70, False, [(0, 32), (32, 64), (64, 70)]), (130, True, [(0, 64), (64, 128), (128, 130)])],
)  # fmt: skip
def test_a_solves_right_hand_sides_split_into_column_blocks(k, lower_rhs, want, monkeypatch):
    """At least PART columns a chain (whole cache lines), four chains a thread; BLOCK wide
    for a lower triangular B, whose block rows' nonzero columns end at a block's edge."""
    monkeypatch.setattr(blocked, "get_num_threads", lambda: 2)
    assert blocked._parts(k, lower_rhs) == want


@pytest.mark.parametrize("n", [N, 4 * blocked.BLOCK + 1])  # a last block of one row
def test_one_right_hand_side_and_a_one_row_block_are_kept_programs(n):
    """A one-column (or one-row) product is a matrix-vector shape: the packed kernel takes
    it all the same (gemm_run.adding_plan), so the solve is one kept program."""
    program.clear()
    t = np.triu(np.random.default_rng(n).standard_normal((n, n))) / n + np.eye(n)
    b = np.random.default_rng(2).standard_normal((n, 1))
    for _ in range(2):
        x = kael.tensor(b.copy())
        blocked.solve(kael.tensor(t), x, lower=False)
        np.testing.assert_allclose(x.numpy(), np.linalg.solve(t, b), rtol=1e-10, atol=1e-10)
    assert len(program.kept()) == 1


def test_an_lu_of_one_row_more_than_whole_panels_is_kept():
    """n = 4 BLOCK + 1: the last trailing update is one row by one column."""
    n = 4 * blocked.BLOCK + 1
    a = np.random.default_rng(7).standard_normal((n, n))
    program.clear()
    for _ in range(2):
        x, piv = kael.tensor(a.copy()), kael.empty(n, dtype=kael.int64)
        blocked.lu(x, piv, kael.zeros(1, dtype=kael.int64))
        want = torch.linalg.lu_factor(torch.tensor(a))
        np.testing.assert_array_equal(piv.numpy(), want.pivots.numpy() - 1)
        np.testing.assert_allclose(x.numpy(), want.LU.numpy(), rtol=1e-9, atol=1e-9)
    assert len(program.kept()) == 1


def test_a_kept_program_runs_on_another_matrix_of_its_layout():
    """The second factorization's working memory is elsewhere: the program built for the
    first is moved onto it (program.py) and gives LAPACK's factors there."""
    rng = np.random.default_rng(9)
    mats = [rng.standard_normal((N, N)) for _ in range(3)]
    held = [kael.tensor(m.copy()) for m in mats]  # all alive: three addresses
    program.clear()
    for m, x in zip(mats, held, strict=True):
        piv, info = kael.empty(N, dtype=kael.int64), kael.zeros(1, dtype=kael.int64)
        blocked.lu(x, piv, info)
        want = torch.linalg.lu_factor(torch.tensor(m))
        np.testing.assert_array_equal(piv.numpy(), want.pivots.numpy() - 1)
        np.testing.assert_allclose(x.numpy(), want.LU.numpy(), rtol=1e-9, atol=1e-9)
    assert len(list(program.kept())) == 1


def test_a_large_cholesky_is_a_kept_program_and_reports_the_first_failed_minor():
    """Every panel runs in the program, each with its own info: the first nonzero one,
    past the panels before it, is LAPACK's info; the leading block those panels finished
    is the factor's (past it torch's partial state is its LAPACK's own)."""
    n = N
    a = np.random.default_rng(3).standard_normal((n, n))
    spd = a @ a.T + n * np.eye(n)
    program.clear()
    for _ in range(2):
        got = kael.linalg.cholesky(kael.tensor(spd))
        np.testing.assert_allclose(got.numpy(), np.linalg.cholesky(spd), rtol=1e-10, atol=1e-10)
    assert len(program.kept()) == 1
    bad = spd.copy()
    bad[200, 200] = -1e6  # the third panel's ninth row
    got = kael.linalg.cholesky_ex(kael.tensor(bad))
    want = torch.linalg.cholesky_ex(torch.tensor(bad))
    assert got.info.item() == want.info.item() == 201
    done = 3 * blocked.BLOCK  # the panels before the failed one
    lead = slice(0, done)
    np.testing.assert_allclose(got.L.numpy()[lead, lead], want.L.numpy()[lead, lead], rtol=1e-10)
