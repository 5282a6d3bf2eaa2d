"""torch.linalg's general (nonsymmetric) eigensolvers: eig (eigenvalues and right
eigenvectors as columns) and eigvals, of batches of real square matrices (float32,
float64), as complex tensors (complex64, complex128).

Each matrix of the contiguous batch copy is solved by the kernel of
codegen/cpu/nonsymmetric_eigen.py (LAPACK's dgeev path: scaling a matrix of huge or tiny
entries into range, balancing, Hessenberg form, the Francis double-shift QR iteration,
back-substitution), all of a batch in one launch over the threads. The eigenvalues come in the Schur form's order (a complex pair together,
positive imaginary part first) as LAPACK's do, though that order may differ from
PyTorch's (the same eigenvalues: see the kernel's module), and each eigenvector has unit
norm and its largest component real, as dgeev normalizes it. The kernel writes the vectors
as rows; the result is that matrix transposed (a view, with the column-major strides
PyTorch's LAPACK result has).

Deviations from PyTorch: complex input raises kael.NotImplementedError (kael has no
complex kernel, zgeev's, yet); eigvals refuses infinities and NaN as eig does (PyTorch's eigvals hands
them to LAPACK, which returns NaN or worse); no autograd.
"""

from __future__ import annotations

from typing import NamedTuple

from kael.codegen.cpu import nonsymmetric_eigen
from kael.frontend import factories
from kael.frontend.factorizations import on_host, outs_into, raise_for, square, working_copy
from kael.frontend.outputs import copied_out, tensor_arg
from kael.frontend.spectral import _not_converged
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import int64
from kael.runtime.errors import NotImplementedError, ValueError
from kael.runtime.tensor_impl import shape_numel


class Eig(NamedTuple):
    """eig's result under torch's field names."""

    eigenvalues: Tensor
    eigenvectors: Tensor


def _real_square(A, op: str) -> Tensor:
    """A as a batch of real square float matrices with only finite entries."""
    A = tensor_arg(A, op, "A")
    if A.dtype.is_complex:
        raise NotImplementedError(f"{op}: complex input ({A.dtype}) is not supported yet")
    A = square(A, op)
    if A.numel() and not bool(A.isfinite().all()):
        raise ValueError(f"{op}: input tensor should not contain infs or NaNs.")
    return A


def _eig(A, op: str, vectors: bool) -> tuple[Tensor, Tensor | None]:
    """(eigenvalues [*, n], eigenvectors as rows [*, n, n] or None) of A's matrices."""
    A = _real_square(A, op)
    n, batch = A.shape[-1], tuple(A.shape[:-2])
    count, complex_dtype = shape_numel(batch), A.dtype.to_complex()
    values = factories.empty((*batch, n), dtype=complex_dtype)
    rows = factories.empty((*batch, n, n), dtype=complex_dtype) if vectors else None
    if count and n:
        a = working_copy(A)
        info = factories.zeros(batch, dtype=int64)
        work = factories.empty((count, nonsymmetric_eigen.work_size(n)), dtype=A.dtype)
        z = factories.empty((count, n, n) if vectors else (1,), dtype=A.dtype)
        nonsymmetric_eigen.eig(a._impl, z._impl, values._impl, (rows if vectors else values)._impl,
                               work._impl, info._impl, n, count, want=vectors)  # fmt: skip
        raise_for(info, op, _not_converged)
    return values, rows


@on_host
def eig(A, *, out=None) -> Eig:
    """A V = V diag(w) for real square A: w and V complex, each column of V of unit norm
    with its largest component real, as torch.linalg.eig."""
    values, rows = _eig(A, "linalg.eig", vectors=True)
    return outs_into(Eig(values, rows.mT), out, "linalg.eig")


@on_host
def eigvals(A, *, out=None) -> Tensor:
    """The eigenvalues of real square A, complex, in eig's order: no eigenvectors are
    formed, so the QR iteration only updates the active block."""
    values, _ = _eig(A, "linalg.eigvals", vectors=False)
    return copied_out(values, out, "linalg.eigvals")


LINALG = {"eig": eig, "eigvals": eigvals}
