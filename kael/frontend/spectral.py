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

from kael.codegen.cpu import symmetric_eigen, team
from kael.frontend import factories, tridiagonal
from kael.frontend.blocked import subtract_product
from kael.frontend.factorizations import (
    on_host,
    outs_into,
    raise_for,
    square,
    working_copy,
)
from kael.frontend.orthogonal import apply_reflectors
from kael.frontend.outputs import copied_out
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import int64
from kael.runtime.errors import TypeError, ValueError
from kael.runtime.tensor_impl import shape_numel

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
    remain past the panel. Returns the column the unblocked reduction goes on from."""
    n = a.shape[-1]
    a = a.reshape(n, n)
    w = factories.zeros((PANEL, n), dtype=a.dtype)
    part = factories.empty(n, dtype=a.dtype)  # the panel's helper's scratch
    sync = factories.zeros(((n - CROSSOVER) // PANEL, team.SIZE), dtype=int64)  # one a panel
    start = 0
    while n - start >= BLOCKED:
        words = (a, values, work, w, part, sync[start // PANEL])
        symmetric_eigen.panel(*(t._impl for t in words), n, start, PANEL)
        start += PANEL
        trailing, v, wt = a[start:, start:], a[start - PANEL : start, start:], w[:, start:]
        subtract_product(trailing, v.mT, wt)
        subtract_product(trailing, wt.mT, v)
    return start


class _Scratch(NamedTuple):
    """The outputs and kernel scratch of one solve of `count` n x n matrices."""

    values: Tensor  # [*, n]
    info: Tensor  # [*] int64
    work: Tensor  # [count, work_size(n)]
    steps: Tensor  # [count, steps_size(n)] int64, the rotation log's record
    strips: Tensor  # [count, strips_size(n, itemsize)], Q^T and the packed strips


def _scratch(A: Tensor, vectors: bool) -> _Scratch:
    """Empty outputs (info zeros) and scratch for A's matrices (the vector parts only
    with `vectors`)."""
    n, batch = A.shape[-1], tuple(A.shape[:-2])
    count, dtype = shape_numel(batch), A.dtype
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
        _divide_and_conquer(a, s, start)
        return
    pairs = factories.empty((count, max(2 * capacity, 1)), dtype=a.dtype)
    symmetric_eigen.eigh(a._impl, values, work, info, pairs._impl, s.steps._impl, capacity,
                         n, count, vectors=vectors, start=start)  # fmt: skip
    if not vectors:
        return
    # (a matrix with NaN or infinity, flagged in its work, takes the kernel's NaN Q^T)
    symmetric_eigen.form(a._impl, work, s.strips._impl, n, count)
    symmetric_eigen.rotate(a._impl, pairs._impl, s.steps._impl, info, s.strips._impl,
                           capacity, n, count)  # fmt: skip


def _nonfinite(work: Tensor, n: int) -> bool:
    """Whether prepare flagged the (first) matrix: NaN or infinity in its triangle."""
    return bool(work[0, symmetric_eigen.flag_index(n)].isnan())


def _divide_and_conquer(a: Tensor, s: _Scratch, start: int) -> None:
    """One prepared matrix's eigenpairs (from column `start`, the panels done): the
    kernel's reduction to T alone, T's eigenpairs by divide and conquer
    (frontend/tridiagonal.py), and the reduction's reflectors applied to T's
    eigenvectors in blocks (LAPACK's dormtr: no Q formed), transposed into `a`'s rows;
    the eigenvalues scaled back by prepare's sigma."""
    n = a.shape[-1]
    none = factories.empty(1, dtype=a.dtype)
    symmetric_eigen.eigh(a._impl, s.values._impl, s.work._impl, s.info._impl, none._impl,
                         s.steps._impl, 0, n, 1, vectors=symmetric_eigen.TRIDIAGONAL,
                         start=start)  # fmt: skip
    sigma = float(s.work[0, symmetric_eigen.sigma_index(n)])
    values, columns = tridiagonal.eigh(s.values.reshape(n).clone(), s.work[0, : n - 1].clone())
    _reflect_blocks(a.reshape(n, n), s.work, columns[None])
    a.reshape(n, n).copy_(columns.mT)
    s.values.reshape(n).copy_(values / sigma)


def _reflect_blocks(a: Tensor, work: Tensor, x: Tensor) -> None:
    """x [1, n, k] = Q x for the reduced n x n `a`'s Q = H_0 ... H_{n-2} (each v_j in row
    j of `a` from column j + 1, tau in work), in blocks of FORM_BLOCK reflectors, the last
    block first (orthogonal.apply_reflectors)."""
    n = a.shape[-1]
    for k in reversed(range(0, n - 1, FORM_BLOCK)):
        nb = min(FORM_BLOCK, n - 1 - k)
        panel = a[k : k + nb, k + 1 :].mT.contiguous().reshape(1, n - k - 1, nb)
        tau = work[:, n + k : n + k + nb]
        apply_reflectors(panel, tau, x[:, k + 1 :], transpose=False)


def _eigh(A, UPLO, op: str, vectors: bool) -> tuple[Tensor, Tensor]:
    """(eigenvalues [*, n], eigenvectors as rows [*, n, n]) of the UPLO triangle of A."""
    A = square(A, op)
    lower = _uplo(UPLO, op)
    s = _scratch(A, vectors)
    a = working_copy(A)
    if s.work.numel() and A.shape[-1]:
        for capacity in symmetric_eigen.capacities(A.shape[-1]) if vectors else (0,):
            _solve(a, lower, vectors, capacity, s)
            if not vectors or not bool(s.info.eq(-1).any()):
                break
            a = working_copy(A)  # the log overflowed: again, with room for every sweep
    # PyTorch names linalg.eigh in eigvalsh's failures too (both are its _linalg_eigh).
    raise_for(s.info, "linalg.eigh", _not_converged)
    return s.values, a


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
