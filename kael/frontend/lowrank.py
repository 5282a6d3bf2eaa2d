"""torch.svd_lowrank and torch.pca_lowrank: randomized truncated SVD (Halko, Martinsson
and Tropp 2009, algorithm 5.1) on kael's matmul, QR and SVD.

A random N(0, 1) test matrix R of q columns (kael.randn: the draws are kael's, not torch's
for one seed) gives the basis Q of A R, sharpened by `niter` power iterations through A^H;
the SVD of the small Q^H A gives the factors. A matrix of rank at most q is recovered to
the precision (so are its singular values, whatever the draws); beyond, the result is the
usual randomized estimate of the largest q."""

from __future__ import annotations

from kael.frontend import orthogonal, outputs, random, singular
from kael.frontend.linalg import matmul
from kael.frontend.tensor import Tensor
from kael.runtime import dtypes
from kael.runtime.errors import ValueError


def _basis(A: Tensor, q: int, niter: int, M: Tensor | None) -> Tensor:
    """An orthonormal basis of (A - M)'s range, q columns, after niter power iterations."""

    def times(X: Tensor, Y: Tensor, adjoint: bool) -> Tensor:
        left = X.mH if adjoint else X
        return matmul(left, Y)

    def minus_m(Y: Tensor, adjoint: bool = False) -> Tensor:
        out = times(A, Y, adjoint)
        return out if M is None else out - times(M, Y, adjoint)

    dtype = A.dtype if A.dtype.is_floating_point or A.dtype.is_complex else dtypes.float32
    R = random.randn(A.shape[-1], q, dtype=dtype, device=A.device)
    Q = orthogonal.qr(minus_m(R)).Q
    for _ in range(niter):
        Q = orthogonal.qr(minus_m(Q, adjoint=True)).Q
        Q = orthogonal.qr(minus_m(Q)).Q
    return Q


def _svd_lowrank(A: Tensor, q: int, niter: int, M: Tensor | None):
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    wide = m < n
    if wide:  # the algorithm wants a tall matrix: factor A^H and swap U and V
        A = A.mH
        M = None if M is None else M.mH
    Q = _basis(A, q, niter, M)
    B = matmul(Q.mH, A)
    if M is not None:
        B = B - matmul(Q.mH, M)
    U, S, Vh = singular.svd(B, full_matrices=False)
    U, V = matmul(Q, U), Vh.mH
    return (V, S, U) if wide else (U, S, V)


def _counts(A: Tensor, q, niter, op: str) -> tuple[Tensor, int, int]:
    A = outputs.tensor_arg(A, op, "A")
    if A.ndim < 2:
        raise ValueError(f"{op}: A must have at least 2 dimensions, got {A.ndim}")
    q = None if q is None else outputs.int_arg(q, op, "q")
    niter = 2 if niter is None else outputs.int_arg(niter, op, "niter")
    return A, q, niter


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None):
    """(U, S, V) of A - M's q largest singular triplets, A ~ U diag(S) V^H, by randomized
    subspace iteration; M (broadcast to A) is subtracted without being formed into A. As
    torch's, q past min(m, n) gives min(m, n) triplets and a negative niter none."""
    A, q, niter = _counts(A, q, niter, "svd_lowrank")
    q = 6 if q is None else q
    if q < 0:
        raise ValueError(f"svd_lowrank: q must be non-negative, got q={q}")
    M = None if M is None else outputs.tensor_arg(M, "svd_lowrank", "M")
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2):
    """(U, S, V) of the principal components of A's rows (centered by the column means
    unless center=False): svd_lowrank of A - mean, q = min(6, m, n) by default."""
    A, q, niter = _counts(A, q, niter, "pca_lowrank")
    if niter < 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(
            f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}"
        )
    center = outputs.bool_arg(center, "pca_lowrank", "center")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(dim=-2, keepdim=True), q, niter, None)


FUNCTIONS = {"svd_lowrank": svd_lowrank, "pca_lowrank": pca_lowrank}
