"""torch.linalg's orthogonal family: qr (modes 'reduced', 'complete', 'r'),
householder_product (LAPACK's orgqr) and torch.qr's deprecated `some` form.

Householder QR runs kael's dense kernels (codegen/cpu/householder.py) on a contiguous
copy of the batch, one matrix per work item: geqr2 leaves R and the reflectors in it,
and org2r turns the reflectors into Q's columns, as LAPACK's geqrf and orgqr do for
PyTorch, so Q and R's signs are PyTorch's. Inputs are float32 or float64; a cuda tensor
is factored on the host (factorizations.on_host).
"""

from __future__ import annotations

from typing import NamedTuple

from kael.codegen.cpu import householder, pair
from kael.frontend import blocked, factories
from kael.frontend.factorizations import (
    float_dtype,
    lapack_layout,
    matrices,
    on_host,
    same_dtype,
    working_copy,
)
from kael.frontend.outputs import bool_arg, copied_out, tensor_arg
from kael.frontend.tensor import Tensor
from kael.runtime.errors import ValueError
from kael.runtime.tensor_impl import shape_numel

MODES = ("reduced", "complete", "r")


class QR(NamedTuple):
    Q: Tensor
    R: Tensor


NB = 64  # the blocked kernels' panel width (32, LAPACK's default, measured 5-10% slower at 512)
BLOCKED = 128  # from this many reflectors on, panels and matrix products
PANEL_COLUMNS = 2 * NB  # the widest block one matrix factors through a transposed copy


def apply_reflectors(
    panel: Tensor,
    tau: Tensor,
    c: Tensor,
    transpose: bool,
    t: Tensor | None = None,
    after: tuple | None = None,
    lead: int = 0,
) -> Tensor:
    """C = H C (or H^T C) in place, H = H_0 ... H_{nb-1} = I - V T V^T the block of
    reflectors in `panel` [count, r, nb]: LAPACK's larfb, in kael's matrix products.
    Returns T (larft's), or takes it as `t` where the same block was applied before.
    `after` (one matrix's prepared panel launch, which may overwrite `panel` and C's first
    `lead` columns) runs beside the last product (blocked.subtract_ahead)."""
    count, rows, nb = panel.shape
    v = factories.empty((count, rows, nb), dtype=panel.dtype)
    householder.reflectors(panel._impl, v._impl, count)
    if t is None:
        t = factories.empty((count, nb, nb), dtype=panel.dtype)
        householder.larft((v.mT @ v)._impl, tau._impl, t._impl, count)
    w = (t.mT if transpose else t) @ (v.mT @ c)
    if after is None:
        blocked.subtract_product(c, v, w)
    else:
        blocked.subtract_ahead(c[0]._impl, v[0]._impl, w[0]._impl, lead, after)
    return t


def _panel(op: str, block: Tensor, tau: Tensor) -> tuple[tuple, Tensor]:
    """geqr2 or org2r (`op`) of one matrix's block [1, m, n] of at most PANEL_COLUMNS
    columns, prepared: walked column-major through a transposed copy (householder.panel:
    its row loops were 8 elements short). Returns the launch and the scratch it uses, to
    be kept until it has run."""
    _, m, n = block.shape
    scratch = factories.empty(n * (m + householder.PAD), dtype=block.dtype)
    return householder.prepared_panel(op, block[0]._impl, tau[0]._impl, scratch._impl), scratch


def _householder(op: str, block: Tensor, tau: Tensor, work: Tensor) -> None:
    """geqr2 or org2r (`op`) of a [count, m, n] block: a batch one matrix a work item, or
    one matrix's block of at most PANEL_COLUMNS columns through _panel."""
    count, m, n = block.shape
    if count == 1 and 0 < n <= PANEL_COLUMNS:
        launch, _scratch = _panel(op, block, tau)
        pair.run_in_order([launch])
    else:
        getattr(householder, op)(block._impl, tau._impl, work._impl, count)


def householder_qr(a: Tensor, blocks: dict | None = None) -> tuple[Tensor, Tensor]:
    """(packed R and reflectors, tau [*, min(m, n)]) of the contiguous copy `a`, in place:
    geqr2 on the whole, or (LAPACK's geqrf) on panels of NB columns, each block of
    reflectors applied to the columns after it at once. `blocks` (a dict) receives each
    applied block's T by its first column, for _orgqr to apply the same blocks again.
    One matrix looks ahead: each block's product updates the next panel's columns first
    and factors that panel beside the rest of it."""
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = tuple(a.shape[:-2])
    tau = factories.zeros((*batch, k), dtype=a.dtype)
    count = shape_numel(batch)
    if not (count and m and n):
        return a, tau
    a3, tau2 = a.reshape(count, m, n), tau.reshape(count, k)
    work = factories.empty((count, n), dtype=a.dtype)
    if k < BLOCKED:
        _householder("geqr2", a3, tau2, work)
        return a, tau
    factored = 0  # the panels left of this column are factored already
    for j in range(0, k, NB):
        jb = min(NB, k - j)
        panel, panel_tau = a3[:, j:, j : j + jb], tau2[:, j : j + jb]
        if j >= factored:
            _householder("geqr2", panel, panel_tau, work)
        if j + jb < n:
            after, _scratch, j2 = None, None, j + jb
            nb2 = min(NB, k - j2) if count == 1 else 0
            if nb2 > 0:
                next_block = (a3[:, j2:, j2 : j2 + nb2], tau2[:, j2 : j2 + nb2])
                after, _scratch = _panel("geqr2", *next_block)
                factored = j2 + nb2
            c = a3[:, j:, j2:]
            t = apply_reflectors(panel, panel_tau, c, transpose=True, after=after, lead=nb2)
            if blocks is not None:
                blocks[j] = t
    return a, tau


def _orgqr(q: Tensor, tau: Tensor, blocks: dict | None = None) -> Tensor:
    """The contiguous `q` [*, m, n] (its first k columns reflectors, tau [*, k]) made
    Q's first n columns, in place: org2r on the whole, or (LAPACK's orgqr) org2r on the
    last panel and then, panel by panel backward, each block applied to the columns
    after it and org2r on its own columns (beside the block's last product, for one
    matrix: it needs only the block's reflectors). `blocks`: householder_qr's T of each
    block."""
    m, n = q.shape[-2:]
    k = tau.shape[-1]
    count = shape_numel(q.shape[:-2])
    if not (count and m and n):
        return q
    q3, tau2 = q.reshape(count, m, n), tau.contiguous().reshape(count, k)
    work = factories.empty((count, n), dtype=q.dtype)
    last = (k - 1) // NB * NB if k >= BLOCKED else 0
    q3[:, :last, last:] = 0
    _householder("org2r", q3[:, last:, last:], tau2[:, last:], work)
    for j in range(last - NB, -1, -NB):
        panel, panel_tau = q3[:, j:, j : j + NB], tau2[:, j : j + NB]
        known = None if blocks is None else blocks.get(j)
        after, _scratch = _panel("org2r", panel, panel_tau) if count == 1 else (None, None)
        c = q3[:, j:, j + NB :]
        apply_reflectors(panel, panel_tau, c, transpose=False, t=known, after=after)
        if after is None:
            _householder("org2r", panel, panel_tau, work)
        q3[:, :j, j : j + NB] = 0
    return q


def _reflectors(packed: Tensor, columns: int) -> Tensor:
    """A contiguous [*, m, columns] copy of the reflectors' columns, zero-padded past them
    (org2r makes the padding the identity's columns)."""
    if columns <= packed.shape[-1]:
        return working_copy(packed[..., :columns])
    q = factories.zeros((*packed.shape[:-1], columns), dtype=packed.dtype)
    q[..., : packed.shape[-1]] = packed
    return q


@on_host
def qr(A, mode: str = "reduced", *, out=None) -> QR:
    """A = Q R with Q orthonormal columns and R upper triangular, batched: 'reduced'
    (Q [m, k], R [k, n], k = min(m, n)), 'complete' (Q [m, m], R [m, n]) or 'r' (R only,
    Q empty), as torch.linalg.qr."""
    A = matrices(A, "linalg.qr")
    if mode not in MODES:
        raise ValueError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
            "(default), 'r', or 'complete'"
        )
    m, n = A.shape[-2:]
    blocks: dict = {}  # each block's T, applied again to form Q
    packed, tau = householder_qr(working_copy(A, padded=True), blocks)
    columns = m if mode == "complete" else min(m, n)
    r = packed[..., :columns, :].triu()
    if mode == "r":
        q = factories.empty((0,), dtype=A.dtype)
    else:
        q = lapack_layout(_orgqr(_reflectors(packed, columns), tau, blocks))
    r = lapack_layout(r)
    if out is not None:
        out_q, out_r = out
        q, r = copied_out(q, out_q, "linalg.qr"), copied_out(r, out_r, "linalg.qr")
    return QR(q, r)


@on_host
def householder_product(A, tau, *, out=None) -> Tensor:
    """The first n columns of H_0 H_1 ... H_{k-1}, H_i = I - tau_i v_i v_i^T with v_i
    A's column i below a unit diagonal (m >= n >= k), as torch.linalg.householder_product."""
    op = "torch.linalg.householder_product"
    A = tensor_arg(A, op, "input")
    tau = tensor_arg(tau, op, "tau")
    if A.ndim < 2:
        raise ValueError(f"{op}: input must have at least 2 dimensions.")
    float_dtype(A, op)
    m, n = A.shape[-2:]
    if m < n:
        raise ValueError(f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.ndim != A.ndim - 1:
        raise ValueError(
            f"{op}: Expected tau to have one dimension less than input, but got tau.ndim "
            f"equal to {tau.ndim} and input.ndim is equal to {A.ndim}"
        )
    if tau.shape[-1] > n:
        raise ValueError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise ValueError(
            f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
            f"{list(tau.shape[:-1])}"
        )
    same_dtype(A, tau, op, "input and tau")
    q = _orgqr(working_copy(A), tau.contiguous())
    return copied_out(lapack_layout(q), out, op)


def qr_some(input, some: bool = True, *, out=None) -> QR:
    """torch.qr (deprecated): the reduced factorization, or the complete one unless `some`."""
    mode = "reduced" if bool_arg(some, "qr", "some") else "complete"
    return qr(input, mode, out=out)


LINALG = {"qr": qr, "householder_product": householder_product}
# torch.* and Tensor methods of the same family.
FUNCTIONS = {"qr": qr_some, "orgqr": householder_product}
NOT_METHODS: frozenset[str] = frozenset()
METHODS: dict = {}
