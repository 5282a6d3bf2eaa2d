"""torch.linalg's symmetric eigensolvers: eigh (eigenvalues ascending and the eigenvectors
as columns) and eigvalsh, batched, float32 and float64, reading only the UPLO triangle.

Each matrix of the (contiguous) batch copy is solved by the kernels of
codegen/cpu/symmetric_eigen.py: tridiagonalization, the implicit QL iteration, sorting,
and for eigenvectors Q^T's forming and the rotations' replay (over the threads, in a
scratch of strips_size(n, itemsize) per matrix). They leave the eigenvectors as rows; the result
is that matrix transposed (a view, with the column-major strides PyTorch's LAPACK result
has). A NaN in the read triangle raises LinAlgError as PyTorch's LAPACK does when it
fails to converge; an infinity gives NaN eigenvalues (and eigenvectors). torch.symeig is
gone, so there are no torch-level names.
"""

from __future__ import annotations

from typing import NamedTuple

from kael.codegen.cpu import symmetric_eigen
from kael.frontend import factories
from kael.frontend.factorizations import _out, on_host, raise_for, square, working_copy
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import int64
from kael.runtime.errors import TypeError, ValueError
from kael.runtime.tensor_impl import shape_numel


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


def _eigh(A, UPLO, op: str, vectors: bool) -> tuple[Tensor, Tensor]:
    """(eigenvalues [*, n], eigenvectors as rows [*, n, n]) of the UPLO triangle of A."""
    A = square(A, op)
    lower = _uplo(UPLO, op)
    n, batch = A.shape[-1], tuple(A.shape[:-2])
    count = shape_numel(batch)
    values = factories.empty((*batch, n), dtype=A.dtype)
    info = factories.zeros(batch, dtype=int64)
    a = working_copy(A)
    if count and n:
        work = factories.empty((count, 4 * n), dtype=A.dtype)
        steps = factories.empty(
            (count, symmetric_eigen.steps_size(n) if vectors else 1), dtype=int64
        )
        strips = factories.empty(
            (count, symmetric_eigen.strips_size(n, A.dtype.itemsize) if vectors else 1),
            dtype=A.dtype,
        )
        for capacity in symmetric_eigen.capacities(n) if vectors else (0,):
            pairs = factories.empty((count, max(2 * capacity, 1)), dtype=A.dtype)
            symmetric_eigen.eigh(a._impl, values._impl, work._impl, info._impl, pairs._impl,
                                 steps._impl, strips._impl, capacity, n, count,
                                 lower=lower, vectors=vectors)  # fmt: skip
            if not vectors or not bool(info.eq(-1).any()):
                break
            a = working_copy(A)  # the log overflowed: again, with room for every sweep
    # PyTorch names linalg.eigh in eigvalsh's failures too (both are its _linalg_eigh).
    raise_for(info, "linalg.eigh", _not_converged)
    return values, a


@on_host
def eigh(A, UPLO: str = "L", *, out=None) -> Eigh:
    """A = V diag(w) V^T for symmetric A given by its UPLO triangle: w ascending, V's
    columns orthonormal eigenvectors (each up to sign), as torch.linalg.eigh."""
    values, rows = _eigh(A, UPLO, "linalg.eigh", vectors=True)
    result = Eigh(values, rows.mT)
    if out is None:
        return result
    if not isinstance(out, tuple) or len(out) != 2:
        raise TypeError("linalg.eigh(): out must be a tuple of two Tensors")
    return Eigh(*(_out(r, o, "linalg.eigh") for r, o in zip(result, out, strict=True)))


@on_host
def eigvalsh(A, UPLO: str = "L", *, out=None) -> Tensor:
    """The eigenvalues of symmetric A (its UPLO triangle), ascending: no eigenvectors are
    accumulated, so it costs the tridiagonalization and O(n^2) iterations."""
    values, _ = _eigh(A, UPLO, "linalg.eigvalsh", vectors=False)
    return _out(values, out, "linalg.eigvalsh")


LINALG = {"eigh": eigh, "eigvalsh": eigvalsh}
FUNCTIONS: dict = {}
NOT_METHODS: frozenset[str] = frozenset()
METHODS: dict = {}
