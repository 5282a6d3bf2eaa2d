"""torch.linalg's symmetric eigensolvers: eigh (eigenvalues ascending and the eigenvectors
as columns) and eigvalsh, batched, float32 and float64, reading only the UPLO triangle.

Each matrix of the (contiguous) batch copy is solved by the kernels of
codegen/cpu/symmetric_eigen.py: scaling, tridiagonalization, the implicit QL iteration,
sorting, and for eigenvectors Q^T's forming and the rotations' replay (over the threads,
in a scratch of strips_size(n, itemsize) per matrix). One matrix of BLOCKED rows or more
is reduced as LAPACK's dsytrd does, in panels whose trailing updates run in kael's matrix
product; its eigenvectors (from DIVIDE rows) come as dsyevd's do: T's by divide and
conquer (frontend/tridiagonal.py), then the reduction's reflectors applied to them in
blocks (dormtr's larfb, through the matrix product), no Q formed and no rotation
replayed (512 x 512: 32 -> 27 ms). The eigenvectors end as rows; the result is that
matrix transposed (a view, with the column-major strides PyTorch's LAPACK result has). A
NaN in the read triangle raises LinAlgError as PyTorch's LAPACK does when it fails to
converge; an infinity gives NaN eigenvalues (and eigenvectors). torch.symeig is gone, so
there are no torch-level names.
"""

from __future__ import annotations

from typing import NamedTuple

from kael.codegen.cpu import gemm_run, program, symmetric_eigen, team
from kael.codegen.cpu.program import Program
from kael.frontend import factories, index_ops, tridiagonal
from kael.frontend.factorizations import (
    on_host,
    outs_into,
    raise_for,
    square,
    working_copy,
)
from kael.frontend.orthogonal import Arena, add_reflectors
from kael.frontend.outputs import copied_out
from kael.frontend.tensor import Tensor
from kael.frontend.views import derive, narrowed, selected, transpose
from kael.runtime.dtypes import float64, int64
from kael.runtime.errors import TypeError, ValueError
from kael.runtime.tensor_impl import TensorImpl, shape_numel
from kael.runtime.threadpool import get_num_threads

PANEL = 32  # the columns of one panel of the blocked reduction
CROSSOVER = 128  # the trailing rows from which the unblocked reduction finishes
BLOCKED = PANEL + CROSSOVER  # the order from which one matrix is reduced in panels
FORM_BLOCK = 64  # the reflectors one block application takes (32: 10% slower)
DIVIDE = BLOCKED  # the order from which one matrix's vectors come by divide and conquer


class Eigh(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


def _uplo(UPLO, op: str) -> bool:
    """Whether the lower triangle is read: 'L' or 'U' (either case), as PyTorch takes it."""
    if not isinstance(UPLO, str):
        raise TypeError(f"{op}(): argument 'UPLO' must be str, not {type(UPLO).__name__}")
    if UPLO.upper() not in ("L", "U"):
        raise ValueError(f"{op}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper() == "L"


def _not_converged(code: int) -> str:
    return (
        "The algorithm failed to converge because the input matrix is ill-conditioned or has "
        f"too many repeated eigenvalues (error code: {code})."
    )


def _panels(a: Tensor, values: Tensor, work: Tensor) -> int:
    """Reduce one prepared n x n matrix's leading columns in panels of PANEL (LAPACK's
    dsytrd): each panel by its kernel, the trailing block's rank-2 PANEL update
    A -= V W^T + W V^T by the matrix product, on every thread, while CROSSOVER rows
    remain past the panel. Returns the column the unblocked reduction goes on from.

    The update is one product of depth 2 PANEL, [V; W]^T [W; V], not two of depth PANEL:
    the trailing block streams through the cache once a panel, not twice. The panel
    kernel leaves the rows [W; V; W], both factors as overlapping views."""
    n = a.shape[-1]
    wvw = factories.zeros((3 * PANEL, n), dtype=a.dtype)  # W, V, W again
    part = factories.empty(n, dtype=a.dtype)  # the panel's helper's scratch
    sync = factories.zeros(((n - CROSSOVER) // PANEL, team.SIZE), dtype=int64)  # one a panel
    impls = tuple(t._impl for t in (a.reshape(n, n), values, work, wvw, part, sync))
    program.run(("eigh panels", PANEL, BLOCKED, get_num_threads()), impls, _panels_program)
    return _reduced(n)


def _reduced(n: int) -> int:
    """The column from which _panels leaves an n x n matrix to the unblocked reduction."""
    start = 0
    while n - start >= BLOCKED:
        start += PANEL
    return start


def _panels_program(a, values, work, wvw, part, sync) -> Program:
    """_panels' launches on these impls (a program, codegen/cpu/program.py)."""
    n = a.shape[-1]
    held = Program()
    for start in range(0, _reduced(n), PANEL):
        symmetric_eigen.panel(
            a, values, work, wvw, part, selected(sync, 0, start // PANEL), n, start, PANEL, held
        )
        rest = start + PANEL
        factors = narrowed(wvw, 1, rest, n - rest)
        v, w = narrowed(factors, 0, PANEL, 2 * PANEL), narrowed(factors, 0, 0, 2 * PANEL)
        trailing = narrowed(narrowed(a, 0, rest, n - rest), 1, rest, n - rest)
        held.add(*gemm_run.adding_steps(held, trailing, transpose(v, 0, 1), w, True))
    return held


class _Scratch(NamedTuple):
    """The outputs and kernel scratch of one solve of `count` n x n matrices."""

    values: Tensor  # [*, n]
    info: Tensor  # [*] int64
    work: Tensor  # [count, work_size(n)]
    steps: Tensor  # [count, steps_size(n)] int64, the rotation log's record
    strips: Tensor  # [count, strips_size(n, itemsize)], Q^T and the packed strips


def _scratch(shape: tuple[int, ...], dtype, vectors: bool) -> _Scratch:
    """Empty outputs (info zeros) and scratch for matrices of `shape` (the vector parts
    only with `vectors`)."""
    n, batch = shape[-1], tuple(shape[:-2])
    count = shape_numel(batch)
    steps = symmetric_eigen.steps_size(n) if vectors else 1
    strips = symmetric_eigen.strips_size(n, dtype.itemsize) if vectors else 1
    return _Scratch(
        factories.empty((*batch, n), dtype=dtype),
        factories.zeros(batch, dtype=int64),
        factories.empty((count, symmetric_eigen.work_size(n)), dtype=dtype),
        factories.empty((count, steps), dtype=int64),
        factories.empty((count, strips), dtype=dtype),
    )


def _solve(a: Tensor, lower: bool, vectors: bool, capacity: int, s: _Scratch) -> None:
    """One try of the solver on the contiguous copy `a` of count = s.work.shape[0]
    matrices: eigenvalues and info into `s`, with `vectors` the eigenvectors as the rows
    of `a` (a rotation log of `capacity` pairs). One matrix of BLOCKED rows or more is
    reduced in panels, and from DIVIDE rows its vectors come by divide and conquer."""
    n, count = a.shape[-1], s.work.shape[0]
    values, work, info = s.values._impl, s.work._impl, s.info._impl
    symmetric_eigen.prepare(a._impl, values, work, info, n, count, lower=lower, vectors=vectors)
    blocked = count == 1 and n >= BLOCKED
    start = _panels(a, s.values, s.work) if blocked else 0
    if vectors and count == 1 and n >= DIVIDE and not _nonfinite(s.work, n):
        _divide_and_conquer(a, s, start, capacity)
        return
    _iterate(a, vectors, capacity, s, start)


def _iterate(a: Tensor, vectors: bool, capacity: int, s: _Scratch, start: int) -> None:
    """The eigh kernel from column `start` (the reduction's rest, QL, the sort) and, with
    `vectors`, Q^T formed and the QL rotations replayed on it into `a`'s rows."""
    n, count = a.shape[-1], s.work.shape[0]
    values, work, info = s.values._impl, s.work._impl, s.info._impl
    pairs = factories.empty((count, max(2 * capacity, 1)), dtype=a.dtype)
    symmetric_eigen.eigh(a._impl, values, work, info, pairs._impl, s.steps._impl, capacity,
                         n, count, vectors=vectors, start=start)  # fmt: skip
    if not vectors:
        return
    # (a matrix with NaN or infinity, flagged in its work, takes the kernel's NaN Q^T)
    symmetric_eigen.form(a._impl, work, s.strips._impl, n, count)
    symmetric_eigen.rotate(a._impl, pairs._impl, s.steps._impl, info, s.strips._impl,
                           capacity, n, count)  # fmt: skip


def _with_room(n: int, vectors: bool, s: _Scratch, attempt) -> Tensor:
    """attempt(capacity) -> the eigenvectors' rows, again with room for every sweep where
    the rotation log overflowed (info -1); then raise for a failure to converge."""
    for capacity in symmetric_eigen.capacities(n) if vectors else (0,):
        rows = attempt(capacity)
        if not vectors or not bool(s.info.eq(-1).any()):
            break
    # PyTorch names linalg.eigh in eigvalsh's failures too (both are its _linalg_eigh).
    raise_for(s.info, "linalg.eigh", _not_converged)
    return rows


def tridiagonal_eigh(d: Tensor, e: Tensor) -> tuple[Tensor, Tensor]:
    """(eigenvalues ascending [count, n], eigenvectors as rows [count, n, n]) of the count
    symmetric tridiagonal matrices with diagonals d [count, n] and off-diagonals e [count,
    n - 1] (finite, of a moderate scale: divide and conquer's leaves): the eigh kernel's
    QL iteration alone (no reflectors: Q is the identity), its rotations replayed. Each
    matrix is scaled by powers of two to a largest entry in [0.5, 1) first, as prepare
    scales a dense one (the eigenvalues are scaled back): a leaf far smaller than the
    rest of T would not converge in its sweeps, and 1 / (a subnormal float32) overflows."""
    count, n = d.shape
    s = _scratch((count, n, n), d.dtype, vectors=True)
    top = index_ops.cat([d, e], dim=-1).abs().amax(dim=-1, keepdim=True).to(float64)
    exponent = top.log2().floor().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0) + 1
    half = (exponent / 2).floor()
    first, second = (-half).exp2(), (half - exponent).exp2()  # as tridiagonal._powers
    d = (d.to(float64) * first * second).to(d.dtype)
    e = (e.to(float64) * first * second).to(d.dtype)

    def attempt(capacity: int) -> Tensor:
        a = factories.zeros((count, n, n), dtype=d.dtype)  # no reflectors: tau is 0
        a.diagonal(0, -2, -1).copy_(d)  # (the kernel reads T's last diagonal entry here)
        s.values.copy_(d)
        s.info.zero_()  # (prepare's job where there is a matrix to prepare)
        s.work.zero_()
        s.work[:, : n - 1] = e
        s.work[:, symmetric_eigen.sigma_index(n)] = 1.0  # scaled back below
        _iterate(a, True, capacity, s, start=n - 1)
        return a

    rows = _with_room(n, True, s, attempt)
    return (s.values.to(float64) / first / second).to(d.dtype), rows


def _nonfinite(work: Tensor, n: int) -> bool:
    """Whether prepare flagged the (first) matrix: NaN or infinity in its triangle."""
    return bool(work[0, symmetric_eigen.flag_index(n)].isnan())


def _divide_and_conquer(a: Tensor, s: _Scratch, start: int, capacity: int) -> None:
    """One prepared matrix's eigenpairs (from column `start`, the panels done): the
    kernel's reduction to T alone, T's eigenpairs by divide and conquer
    (frontend/tridiagonal.py), and the reduction's reflectors applied to T's
    eigenvectors in blocks (LAPACK's dormtr: no Q formed), transposed into `a`'s rows;
    the eigenvalues scaled back by prepare's sigma. Where T's scales are too far apart
    for the merges (tridiagonal.eigh's None), the QL iteration with a log of `capacity`
    rotations goes on from T instead."""
    n = a.shape[-1]
    none = factories.empty(1, dtype=a.dtype)
    symmetric_eigen.eigh(a._impl, s.values._impl, s.work._impl, s.info._impl, none._impl,
                         s.steps._impl, 0, n, 1, vectors=symmetric_eigen.TRIDIAGONAL,
                         start=start)  # fmt: skip
    sigma = float(s.work[0, symmetric_eigen.sigma_index(n)])
    solved = tridiagonal.eigh(s.values.reshape(n).clone(), s.work[0, : n - 1].clone())
    if solved is None:  # scales too far apart for the merges: QL on T (the reduction done)
        _iterate(a, True, capacity, s, start=n - 1)
        return
    values, columns = solved
    _reflect_blocks(a.reshape(n, n), s.work, columns[None])
    a.reshape(n, n).copy_(columns.mT)
    s.values.reshape(n).copy_(values / sigma)


def _reflect_blocks(a: Tensor, work: Tensor, x: Tensor) -> None:
    """x [1, n, k] = Q x for the reduced n x n `a`'s Q = H_0 ... H_{n-2} (each v_j in row
    j of `a` from column j + 1, tau in work), in blocks of FORM_BLOCK reflectors, the last
    block first (orthogonal.add_reflectors, reading each block's reflectors transposed
    in place): a program (codegen/cpu/program.py) built once for the layout."""
    impls = (a._impl, work._impl, x._impl)
    program.run(("reflect blocks", FORM_BLOCK, get_num_threads()), impls, _reflect_program)


def _reflect_program(a: TensorImpl, work: TensorImpl, x: TensorImpl) -> Program:
    """_reflect_blocks' launches on these impls."""
    n, columns = a.shape[-1], x.shape[-1]
    held = Program()
    arena = Arena(held, 1, n, FORM_BLOCK, columns, a.dtype)
    for k in reversed(range(0, n - 1, FORM_BLOCK)):
        nb, rows = min(FORM_BLOCK, n - 1 - k), n - k - 1
        # the block's reflectors: rows k.. k + nb of `a` from column k + 1, as columns
        panel = derive(a, (1, rows, nb), (0, 1, a.strides[0]), a.offset + k * a.strides[0] + k + 1)
        tau = narrowed(work, 1, n + k, nb)
        t = arena.take("t", (1, nb, nb))
        add_reflectors(held, arena, panel, tau, narrowed(x, 1, k + 1, rows), False, t, True)
    return held


def _eigh(A, UPLO, op: str, vectors: bool) -> tuple[Tensor, Tensor]:
    """(eigenvalues [*, n], eigenvectors as rows [*, n, n]) of the UPLO triangle of A."""
    A = square(A, op)
    lower = _uplo(UPLO, op)
    s = _scratch(A.shape, A.dtype, vectors)
    if not (s.work.numel() and A.shape[-1]):
        return s.values, working_copy(A)

    def attempt(capacity: int) -> Tensor:
        a = working_copy(A)
        _solve(a, lower, vectors, capacity, s)
        return a

    return s.values, _with_room(A.shape[-1], vectors, s, attempt)


@on_host
def eigh(A, UPLO: str = "L", *, out=None) -> Eigh:
    """A = V diag(w) V^T for symmetric A given by its UPLO triangle: w ascending, V's
    columns orthonormal eigenvectors (each up to sign), as torch.linalg.eigh."""
    values, rows = _eigh(A, UPLO, "linalg.eigh", vectors=True)
    return outs_into(Eigh(values, rows.mT), out, "linalg.eigh")


@on_host
def eigvalsh(A, UPLO: str = "L", *, out=None) -> Tensor:
    """The eigenvalues of symmetric A (its UPLO triangle), ascending: no eigenvectors are
    accumulated, so it costs the tridiagonalization and O(n^2) iterations."""
    values, _ = _eigh(A, UPLO, "linalg.eigvalsh", vectors=False)
    return copied_out(values, out, "linalg.eigvalsh")


LINALG = {"eigh": eigh, "eigvalsh": eigvalsh}
FUNCTIONS: dict = {}
NOT_METHODS: frozenset[str] = frozenset()
METHODS: dict = {}
