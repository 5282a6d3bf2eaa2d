"""torch.linalg's LDL family: ldl_factor_ex, ldl_factor and ldl_solve, on kael's sytf2 and
sytrs kernels (codegen/cpu/ldl.py).

A = L D L^T with Bunch-Kaufman pivoting from A's lower triangle: LD packs L's strict lower
part and D's 1x1 and 2x2 blocks, the pivots are LAPACK's 1-based ipiv (int32, both entries
of a 2x2 block -kp), as PyTorch returns them. kael has no complex dtypes, so `hermitian`
is taken and changes nothing. A cuda tensor is factored on the host (`on_host`). out= is
checked as PyTorch checks it, but an out of another shape is refused, not resized.
"""

from __future__ import annotations

import itertools
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
from kael.frontend.outputs import bool_arg, output, tensor_arg
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


def _written(result: Tensor, out, op: str) -> Tensor:
    """`result`, or copied into `out`: a tensor of its shape, dtype and device whose elements
    do not share memory (kael resizes no out tensor)."""
    if out is None:
        return result
    return output(out, tuple(result.shape), result.dtype, result.device, op).copy_(result)


def _written_all(results: tuple, out, op: str) -> tuple:
    """`results`, or each copied into its tensor of the tuple (or list) `out`."""
    if out is None:
        return results
    if not isinstance(out, (tuple, list)):
        raise TypeError(
            f"{op}(): argument 'out' must be tuple of Tensors, not {type(out).__name__}"
        )
    if len(out) != len(results):
        raise TypeError(f"{op}(): expected tuple of {len(results)} elements but got {len(out)}")
    return type(results)(*(_written(r, o, op) for r, o in zip(results, out, strict=True)))


@on_host
def _ldl_factor(A, hermitian, check_errors, op: str) -> LDLFactorEx:
    """_factor, and LinAlgError for a singular D when `check_errors`."""
    result = _factor(A, op, hermitian)
    if bool_arg(check_errors, op, "check_errors"):
        raise_for(result.info, op, _singular)
    return result


def ldl_factor_ex(
    A, *, hermitian: bool = False, check_errors: bool = False, out=None
) -> LDLFactorEx:
    """A = P L D L^T P^T (Bunch-Kaufman, LAPACK's sytrf): the packed LD, 1-based int32
    pivots and info (0, or the first zero column of D), as torch.linalg.ldl_factor_ex."""
    op = "torch.linalg.ldl_factor_ex"
    return _written_all(_ldl_factor(A, hermitian, check_errors, op), out, op)


def ldl_factor(A, *, hermitian: bool = False, out=None) -> LDLFactor:
    """The packed LD and pivots of ldl_factor_ex; an exactly singular D raises LinAlgError
    naming the batch element and its zero column."""
    op = "torch.linalg.ldl_factor"
    LD, pivots, _ = _ldl_factor(A, hermitian, True, op)
    return _written_all(LDLFactor(LD, pivots), out, op)


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


def _uniform_from(own: tuple[int, ...], batch: tuple[int, ...]) -> int:
    """The first dim of `batch` from which on LD's batch `own` (as many dims) is either its
    own or broadcast on every dim: one kernel batch stride (LD's, or 0) spans those dims."""
    start, broadcast = len(batch), None
    for dim in reversed(range(len(batch))):
        if batch[dim] != 1:
            if broadcast is not None and broadcast != (own[dim] == 1):
                break
            broadcast = own[dim] == 1
        start = dim
    return start


def _solve_broadcast(w: Tensor, pivots: Tensor, x: Tensor) -> None:
    """The solve kernel on the contiguous x [*batch, n, k] from LD^T's matrices `w` and the
    `pivots` of LD's own batch, never copied per item: batch stride 0 where they repeat,
    a kernel call per index of the leading dims one stride cannot span."""
    batch, (n, k) = tuple(x.shape[:-2]), x.shape[-2:]
    ones = (1,) * (len(batch) - w.ndim + 2)
    w, pivots = w.reshape(*ones, *w.shape), pivots.reshape(*ones, *pivots.shape)
    lead = batch[: _uniform_from(tuple(w.shape[:-2]), batch)]
    xs = x.reshape(shape_numel(lead), -1, n, k)
    for item, index in enumerate(itertools.product(*map(range, lead))):
        at = tuple(i if size > 1 else 0 for i, size in zip(index, w.shape))
        matrices, piv = w[at].reshape(-1, n, n), pivots[at].reshape(-1, n)
        if matrices.shape[0] == 1:  # one matrix for every item: batch stride 0
            matrices, piv = matrices[0], piv[0]
        ldl.solve(matrices._impl, piv._impl, xs[item]._impl, xs.shape[1])


@on_host
def _ldl_solve(LD, pivots, B, hermitian, op: str) -> Tensor:
    """X with A X = B from ldl_factor's (LD, pivots), B's batch broadcast against LD's."""
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
    x = working_copy(B, broadcast_batch(LD, B, op))
    if x.numel():
        # The kernel reads LD^T's rows: ldl_factor's LD is its transpose, no copy.
        _solve_broadcast(LD.mT.contiguous(), pivots.contiguous(), x)
    return x


def ldl_solve(LD, pivots, B, *, hermitian: bool = False, out=None) -> Tensor:
    """X with A X = B from ldl_factor's (LD, pivots), B's batch broadcast against LD's, as
    torch.linalg.ldl_solve."""
    op = "torch.linalg.ldl_solve"
    return _written(_ldl_solve(LD, pivots, B, hermitian, op), out, op)


LINALG = {"ldl_factor_ex": ldl_factor_ex, "ldl_factor": ldl_factor, "ldl_solve": ldl_solve}
