"""torch.linalg's LDL family: ldl_factor_ex, ldl_factor and ldl_solve, on kael's sytf2 and
sytrs kernels (codegen/cpu/ldl.py).

A = L D L^T with Bunch-Kaufman pivoting from A's lower triangle: LD packs L's strict lower
part and D's 1x1 and 2x2 blocks, the pivots are LAPACK's 1-based ipiv (int32, both entries
of a 2x2 block -kp), as PyTorch returns them. kael has no complex dtypes, so `hermitian`
is taken and changes nothing. A cuda tensor is factored on the host (`on_host`).
"""

from __future__ import annotations

from typing import NamedTuple

from kael.codegen.cpu import ldl
from kael.frontend import factories
from kael.frontend.factorizations import (
    broadcast_batch,
    matrices,
    on_host,
    raise_for,
    same_dtype,
    square,
    working_copy,
)
from kael.frontend.outputs import bool_arg, tensor_arg
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import int32
from kael.runtime.errors import TypeError, ValueError
from kael.runtime.tensor_impl import shape_numel


class LDLFactor(NamedTuple):
    LD: Tensor
    pivots: Tensor


class LDLFactorEx(NamedTuple):
    LD: Tensor
    pivots: Tensor
    info: Tensor


def _stacked(t: Tensor):
    """The impl a kernel takes: [n, c] (one matrix for every item) or [count, n, c]."""
    return t._impl if t.ndim == 2 else t.reshape(-1, *t.shape[-2:])._impl


def _singular(code: int) -> str:
    return (
        "The factorization could not be completed because the block diagonal matrix D is "
        f"exactly singular: D[{code},{code}] is zero (LAPACK's info = {code})."
    )


def _factor(A, op: str, hermitian) -> LDLFactorEx:
    """(LD, pivots, info) of A's lower triangle; info > 0 names the first zero column."""
    A = square(A, op)
    bool_arg(hermitian, op, "hermitian")
    n, batch = A.shape[-1], tuple(A.shape[:-2])
    # The kernel walks A's lower triangle by rows of its transpose (see codegen/cpu/ldl.py).
    w = working_copy(A.mT, padded=True)
    pivots = factories.empty((*batch, n), dtype=int32)
    info = factories.zeros(batch, dtype=int32)
    count = shape_numel(batch)
    if count and n:
        ldl.factor(_stacked(w), pivots._impl, info._impl, count)
    return LDLFactorEx(w.triu().mT, pivots, info)


@on_host
def ldl_factor_ex(A, *, hermitian: bool = False, check_errors: bool = False) -> LDLFactorEx:
    """A = P L D L^T P^T (Bunch-Kaufman, LAPACK's sytrf): the packed LD, 1-based int32
    pivots and info (0, or the first zero column of D), as torch.linalg.ldl_factor_ex."""
    op = "torch.linalg.ldl_factor_ex"
    result = _factor(A, op, hermitian)
    if bool_arg(check_errors, op, "check_errors"):
        raise_for(result.info, op, _singular)
    return result


@on_host
def ldl_factor(A, *, hermitian: bool = False) -> LDLFactor:
    """The packed LD and pivots of ldl_factor_ex; an exactly singular D raises LinAlgError
    naming the batch element and its zero column."""
    op = "torch.linalg.ldl_factor"
    LD, pivots, info = _factor(A, op, hermitian)
    raise_for(info, op, _singular)
    return LDLFactor(LD, pivots)


def _checked_pivots(pivots, LD: Tensor, op: str) -> Tensor:
    """`pivots` of LD's shape less its last dim, an integer dtype, and |pivot| in [1, n] (the
    kernel reads the rows they name), as int32."""
    pivots = tensor_arg(pivots, op, "pivots")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise ValueError(
            f"{op}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots "
            f"with shape {list(pivots.shape)} instead"
        )
    if pivots.dtype.is_floating_point or pivots.dtype.is_bool:
        raise TypeError(f"{op}: Expected pivots to be integers. Got {pivots.dtype}")
    if pivots.numel():
        size = pivots.abs()
        low, high = int(size.min()), int(size.max())
        n = LD.shape[-1]
        for bad, bound, value in ((low < 1, ">= 1", low), (high > n, "<= LD.size(-2)", high)):
            if bad:
                raise ValueError(
                    f"Pivots given to ldl_solve must all satisfy |pivot| {bound} (got {value} "
                    f"for n = {n}). Did you properly pass the result of ldl_factor?"
                )
    return pivots.to(int32)


@on_host
def ldl_solve(LD, pivots, B, *, hermitian: bool = False) -> Tensor:
    """X with A X = B from ldl_factor's (LD, pivots), B's batch broadcast against LD's."""
    op = "torch.linalg.ldl_solve"
    LD = square(LD, op, "LD")
    B = tensor_arg(B, op, "B")
    if B.ndim < 2:
        raise ValueError(
            f"{op}: Expected B to have at least 2 dimensions, but it has {B.ndim} dimensions "
            "instead"
        )
    pivots = _checked_pivots(pivots, LD, op)
    same_dtype(LD, matrices(B, op, "B"), op, "LD and B")
    bool_arg(hermitian, op, "hermitian")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise ValueError(
            f"Incompatible matrix sizes for {op}: each A matrix is {n} by {n} but each b "
            f"matrix is {B.shape[-2]} by {B.shape[-1]}"
        )
    batch = broadcast_batch(LD, B, op)
    x = working_copy(B, batch)
    count = shape_numel(batch)
    if count and n and B.shape[-1]:
        w = working_copy(LD.mT, batch)
        piv = pivots.expand(*batch, n).contiguous()
        ldl.solve(_stacked(w), piv._impl, _stacked(x), count)
    return x


LINALG = {"ldl_factor_ex": ldl_factor_ex, "ldl_factor": ldl_factor, "ldl_solve": ldl_solve}
