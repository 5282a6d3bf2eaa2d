"""torch.nn.utils.parametrizations: weight_norm (weight = g * v / ||v||: the state keys
"parametrizations.weight.original0" (g) and "original1" (v) of newer checkpoints),
spectral_norm (weight / sigma: "parametrizations.weight.original" and the power
iteration's "parametrizations.weight.0._u" and "_v") and orthogonal (an orthogonal weight
from the original by matrix_exp, the Cayley map or Householder reflectors, times the
"parametrizations.weight.0.base" of the dynamic trivialization); kael.nn.utils.weight_norm
and spectral_norm are the older hook forms."""

from __future__ import annotations

import functools

import kael
from kael.frontend.linalg import dot
from kael.frontend.products import mv
from kael.frontend.tensor import Tensor
from kael.nn.functional import normalize
from kael.nn.modules.module import Module
from kael.nn.utils import parametrize
from kael.nn.utils.spectral_norm import as_matrix, check_iterations, power_iterate, transposed_dim
from kael.nn.utils.weight_norm import norm_except_dim
from kael.runtime.errors import IndexError, NotImplementedError, ValueError

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Parametrize module.`name` by its norms over every dim but `dim` and its direction."""
    return parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)


def _tensor(module: Module, name: str) -> Tensor:
    """module.`name`, which a parametrization needs to be a tensor."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    return weight


class _SpectralNorm(Module):
    """weight / sigma for a matrix-like weight (a vector is just normalized); u and v
    start from 15 power iterations and take n_power_iterations more per training forward."""

    def __init__(self, weight, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        super().__init__()
        ndim = weight.dim()
        if not -ndim <= dim < ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}] but"
                f" got {dim})"
            )
        check_iterations(n_power_iterations)
        self.dim = dim % ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            matrix = as_matrix(weight.detach(), self.dim)
            rows, cols = matrix.shape
            self.register_buffer(
                "_u", normalize(matrix.new_empty(rows).normal_(0, 1), dim=0, eps=eps)
            )
            self.register_buffer(
                "_v", normalize(matrix.new_empty(cols).normal_(0, 1), dim=0, eps=eps)
            )
            power_iterate(matrix, self._u, self._v, 15, eps, u_first=True)

    def forward(self, weight):
        if weight.dim() == 1:
            return normalize(weight, dim=0, eps=self.eps)
        matrix = as_matrix(weight, self.dim)
        if self.training:
            iterations, eps = self.n_power_iterations, self.eps
            power_iterate(matrix, self._u, self._v, iterations, eps, u_first=True)
        return weight / dot(self._u, mv(matrix, self._v))

    def right_inverse(self, value):
        return value


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Parametrize module.`name` as itself divided by its spectral norm (power iteration)."""
    weight = _tensor(module, name)
    dim = transposed_dim(module) if dim is None else dim
    fn = _SpectralNorm(weight, n_power_iterations, dim, eps)
    return parametrize.register_parametrization(module, name, fn)


def _is_orthogonal(Q: Tensor) -> bool:
    """Whether Q's columns are orthonormal, to 10 * rows ulps (torch's test)."""
    n, k = Q.shape[-2:]
    eye = kael.eye(k, dtype=Q.dtype, device=Q.device)
    return kael.allclose(Q.mH @ Q, eye, atol=10.0 * n * kael.finfo(Q.dtype).eps)


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of a tall A = QR whose R has a non-negative diagonal."""
    X, tau = kael.geqrf(A)
    Q = kael.linalg.householder_product(X, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _exponential(A: Tensor) -> Tensor:
    """kael.matrix_exp(A), looked up at the call (kael's ops load after kael.nn)."""
    return kael.matrix_exp(A)


def _cayley(A: Tensor) -> Tensor:
    """The Cayley retraction (I + A/2)(I - A/2)^-1 of a skew-symmetric A."""
    eye = kael.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    return kael.linalg.solve(kael.add(eye, A, alpha=-0.5), kael.add(eye, A, alpha=0.5))


def _of_skew(orthogonal_of, X: Tensor) -> Tensor:
    """The first k columns of orthogonal_of(A), A the skew-symmetric matrix of a tall X's
    lower triangle padded to n x n (n x k - k(k-1)/2 parameters)."""
    n, k = X.shape[-2:]
    X = X.tril()
    if n != k:
        X = kael.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
    return orthogonal_of(X - X.mH)[..., :k]


def _householder(X: Tensor) -> Tensor:
    """The product of the reflectors below a tall X's diagonal (each of norm-derived tau),
    its columns signed by that diagonal cast to int (the -1s right_inverse stores)."""
    A = X.tril(diagonal=-1)
    tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
    Q = kael.linalg.householder_product(A, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)


# torch's orthogonal maps: a tall X (rows >= columns) to a matrix of orthonormal columns
_MAPS = {
    "matrix_exp": functools.partial(_of_skew, _exponential),
    "cayley": functools.partial(_of_skew, _cayley),
    "householder": _householder,
}


def _tall(X: Tensor) -> tuple[Tensor, bool]:
    """(X or its transpose, whichever has rows >= columns; whether it was transposed)."""
    transposed = X.shape[-2] < X.shape[-1]
    return (X.mT if transposed else X), transposed


def _householder_reflectors(Q: Tensor) -> Tensor:
    """An X whose _householder map is the tall Q (its geqrf, the diagonal set to R's signs,
    flipped where LAPACK skipped the reflection)."""
    A, tau = kael.geqrf(Q)
    diagonal = A.diagonal(dim1=-2, dim2=-1)
    diagonal.sign_()
    diagonal[tau == 0.0] *= -1
    return A


def _completed(Q: Tensor) -> Tensor:
    """A square orthogonal matrix whose first columns are the tall Q's (Q itself when it
    is square and already orthogonal; else completed by Gaussian columns and QR)."""
    n, k = Q.shape[-2:]
    if n == k:
        return Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
    extra = kael.randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)
    return _make_orthogonal(kael.cat([Q, extra], dim=-1))


class _Orthogonal(Module):
    """A matrix (or batch) with orthonormal columns, or rows where it is wide: a map of the
    original, times the square `base` with use_trivialization (set by right_inverse)."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        X, transposed = _tall(X)
        Q = _MAPS[self.orthogonal_map](X)
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        """The original whose forward is Q: with use_trivialization, -I (which every map
        takes to I) with Q, completed to a square orthogonal matrix, as the base."""
        if Q.shape != self.shape:
            raise ValueError(
                f"Expected a matrix or batch of matrices of shape {self.shape}. "
                f"Got a tensor of shape {Q.shape}."
            )
        tall, transposed = _tall(Q)
        if hasattr(self, "base"):
            self.base = _completed(tall)
            negative_eye = kael.zeros_like(Q)
            negative_eye.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return negative_eye
        if self.orthogonal_map != "householder":
            raise NotImplementedError(
                "It is not possible to assign to the matrix exponential "
                "or the Cayley parametrizations when use_trivialization=False."
            )
        A = _householder_reflectors(tall)
        return A.mT if transposed else A


def orthogonal(
    module: Module,
    name: str = "weight",
    orthogonal_map: str | None = None,
    *,
    use_trivialization: bool = True,
) -> Module:
    """Parametrize module.`name` (a matrix or a batch of them) as an orthogonal matrix:
    orthonormal columns, or rows where it is wide. The map defaults to matrix_exp for a
    square or complex weight and householder otherwise."""
    weight = _tensor(module, name)
    if weight.dim() < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.dim()} dimensions."
        )
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    if orthogonal_map not in _MAPS:
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
            f"Got: {orthogonal_map}"
        )
    fn = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    return parametrize.register_parametrization(module, name, fn, unsafe=True)
