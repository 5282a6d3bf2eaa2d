"""The eigenpairs of a symmetric tridiagonal matrix by divide and conquer (LAPACK's
dstedc): what eigh of one large matrix runs after the reduction to tridiagonal form,
in place of the QL iteration's rotations of Q (most of its time).

T splits at an off-diagonal beta: T = diag(T1', T2') + |beta| w w^T, T1' and T2' the
two blocks with |beta| taken off the two diagonal entries beside the split and w =
e_last + sign(beta) e_first. A block of more than LEAF rows splits after its first
LEAF 2^k rows, the most below its half or exactly it (_tree): every block is a whole
tree of LEAF-row leaves but those on T's last rows, so the merges of one height have
one shape, bar one. The leaves (every split's diagonal change made first) are solved
together by eigh's QL kernels, one batch per leaf size. Then each height's merges run
together: the rank-one problems diag(eigenvalues) + |beta| z z^T (z the blocks'
vectors' coordinates beside the split) by codegen/cpu/secular.py's kernels, all of a
height in each launch, and the blocks' vectors times the merge's vectors (the O(n^3)
work) as one run of each product's launches over the height's merges of a shape
(gemm_run.products). Vectors are kept as columns: eigh applies the reduction's
reflectors to them in blocks (dormtr), forming no Q.

As dstedc, T is first split where an off-diagonal is negligible and each block solved
on its own scale (the small ones in one QL batch a size); a block whose rows span more
scales than a merge's slopes can hold is refused (None), and eigh takes QL instead.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from kael.codegen.cpu import gemm_run, secular
from kael.frontend import factories, index_ops
from kael.frontend.factorizations import PAD
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import int64
from kael.runtime.tensor_impl import host_ptr

LEAF = 32  # the most rows a block is solved whole
EPS = {8: 2.0**-53, 4: 2.0**-24}  # LAPACK's eps (the rounding unit), by itemsize
# The least row scale, relative to a block's largest entry, its merges take: slopes
# z^2 / (d - x)^2 of poles that close would overflow past about 2^-(max exponent / 2).
NARROW = {8: 2.0**-480, 4: 2.0**-48}


class _Solved(NamedTuple):
    """A solved block's eigenvectors, as the columns of the matrix at element `offset` of
    the 1-d buffer `owner` with leading dimension `ld`."""

    owner: Tensor
    offset: int
    ld: int

    def address(self, row: int = 0) -> int:
        return (
            host_ptr(self.owner._impl, "linalg.eigh")
            + (self.offset + row * self.ld) * self.owner.dtype.itemsize
        )

    def view(self, rows: int, cols: int) -> Tensor:
        return self.owner.as_strided((rows, cols), (self.ld, 1), self.offset)


def eigh(d: Tensor, e: Tensor) -> tuple[Tensor, Tensor] | None:
    """(eigenvalues ascending [n], eigenvectors as columns [n, n], unit-stride rows) of
    the tridiagonal matrix with diagonal d [n] and off-diagonal e [n - 1] (one dtype),
    or None where a block's range of scales is too wide for its merges (see _divided):
    the caller then takes the QL iteration. As dstedc, T first splits where an
    off-diagonal is negligible, |e_i| <= eps sqrt(|d_i| |d_i+1|), and each block is
    solved on its own scale: the blocks of at most LEAF rows together, one batch a size
    (a diagonal T is n blocks of one row), the larger ones each by divide and conquer."""
    n = d.shape[0]
    eps = EPS[d.dtype.itemsize]
    negligible = e.abs() <= (d[:-1].abs().sqrt() * d[1:].abs().sqrt()) * eps
    ends = [i + 1 for i in negligible.nonzero().reshape(-1).tolist()] if n > 1 else []
    if not ends:
        return _divided(d, e)
    blocks = list(zip([0, *ends], [*ends, n], strict=True))
    values = factories.empty(n, dtype=d.dtype)
    columns = factories.zeros((n, n), dtype=d.dtype)
    for lo, hi in blocks:
        if hi - lo > LEAF:
            solved = _divided(d[lo:hi], e[lo : hi - 1])
            if solved is None:
                return None
            values[lo:hi], columns[lo:hi, lo:hi] = solved
    for starts, size, eigenvalues, rows in _small(d, e, [b for b in blocks if b[1] - b[0] <= LEAF]):
        at = _rows(starts, size)
        values[at] = eigenvalues
        columns[at[:, :, None], at[:, None, :]] = rows.mT
    order = values.argsort(stable=True)
    return values[order], columns[:, order].contiguous()


def _divided(d: Tensor, e: Tensor) -> tuple[Tensor, Tensor] | None:
    """eigh of one block: scaled to a largest entry of 1, split down to leaves, merged; or
    None where some row's scale |d_i| + |e_i-1| + |e_i| is below NARROW[dtype] of that
    largest entry: a merge of a block that small has poles so close that its slopes
    z^2 / (d - x)^2 overflow (NaN eigenpairs, where the QL iteration is exact)."""
    n = d.shape[0]
    first, second = _powers(max(float(d.abs().max()), float(e.abs().max()) if n > 1 else 0.0))
    d, e = d * first * second, (e * first * second).contiguous()  # (as dstedc scales it)
    if n > 1:
        edges = index_ops.cat([e.abs(), factories.zeros(1, dtype=e.dtype)])
        rows = d.abs() + edges + edges.roll(1)
        if float(rows.min()) < NARROW[d.dtype.itemsize]:
            return None
    betas = e.tolist()
    leaves, heights = _tree(n)
    for p, _ in leaves[1:]:  # every split is a leaf's start: it takes |beta| off the
        d[p - 1 : p + 1] -= abs(betas[p - 1])  # diagonal entries beside it
    values, solved = _leaves(d, e, leaves)
    for merges in heights:
        values = _merge(merges, values, solved, e, betas)
    return values / first / second, solved[0].view(n, n)


def _powers(top: float) -> tuple[float, float]:
    """Two powers of two whose product takes `top` into [0.5, 1), each of them a float32
    (one factor would overflow for a subnormal top); 1 and 1 for 0 or a non-finite top."""
    if not 0 < top < math.inf:
        return 1.0, 1.0
    exponent = math.frexp(top)[1]
    half = exponent // 2
    return 2.0**-half, 2.0 ** (half - exponent)


def _tree(n: int) -> tuple[list[tuple[int, int]], list[list[tuple[int, int, int]]]]:
    """The leaves (lo, hi) of T's split tree, in order, and its merges (lo, mid, hi) by
    height (the leaves' parents first): a block of more than LEAF rows splits after its
    first LEAF 2^k rows, the most that are below its half or exactly it."""
    leaves: list[tuple[int, int]] = []
    heights: list[list[tuple[int, int, int]]] = []
    _split(0, n, leaves, heights)
    return leaves, heights


def _split(lo: int, hi: int, leaves: list, heights: list) -> int:
    """_tree's recursion on [lo, hi) (a function, not a closure: no reference cycle);
    returns the block's height."""
    if hi - lo <= LEAF:
        leaves.append((lo, hi))
        return 0
    half = LEAF
    while 2 * half < hi - lo:
        half *= 2
    height = 1 + max(_split(lo, lo + half, leaves, heights), _split(lo + half, hi, leaves, heights))
    heights.extend([] for _ in range(height - len(heights)))
    heights[height - 1].append((lo, lo + half, hi))
    return height


def _leaves(d: Tensor, e: Tensor, leaves: list[tuple[int, int]]) -> tuple[Tensor, dict]:
    """(every leaf's eigenvalues ascending at its rows [n], {its first row: its vectors})
    with the leaves of a size as one batch (_small)."""
    values = factories.empty(d.shape[0], dtype=d.dtype)
    solved = {}
    for starts, size, eigenvalues, rows in _small(d, e, leaves):
        span = _span(starts, size)
        if span is not None:
            values[span] = eigenvalues.reshape(-1)
        else:
            values[_rows(starts, size)] = eigenvalues
        columns = rows.mT.contiguous().reshape(-1)
        for q, lo in enumerate(starts):
            solved[lo] = _Solved(columns, q * size * size, size)
    return values, solved


def _rows(starts: list[int], size: int) -> Tensor:
    """The rows [count, size] of the blocks of `size` rows at `starts`: an index."""
    return factories.tensor(starts, dtype=int64).reshape(-1, 1) + factories.arange(size)


def _span(starts: list[int], size: int) -> slice | None:
    """The rows of the blocks of `size` rows at `starts` as one slice, where they follow
    one another (the leaves of a block do): a view instead of an index."""
    first, count = starts[0], len(starts)
    if starts == list(range(first, first + count * size, size)):
        return slice(first, first + count * size)
    return None


def _small(d: Tensor, e: Tensor, blocks: list[tuple[int, int]]):
    """(starts, size, eigenvalues [count, size], eigenvectors as rows [count, size, size])
    for the blocks (lo, hi) of T of each size, each size one batch through eigh's QL
    kernels (spectral.tridiagonal_eigh); T's leaves tile its rows in order, so a size's
    diagonals are one strided view of d where they do."""
    from kael.frontend import spectral  # spectral imports this module

    by_size: dict[int, list[int]] = {}
    for lo, hi in blocks:
        by_size.setdefault(hi - lo, []).append(lo)
    padded = index_ops.cat([e, factories.zeros(1, dtype=e.dtype)])  # n long: no split
    for size, starts in by_size.items():
        span = _span(starts, size)
        if span is not None:
            diagonals, off = d[span].reshape(-1, size), padded[span].reshape(-1, size)
        else:
            at = _rows(starts, size)
            diagonals, off = d[at], padded[at]
        eigenvalues, rows = spectral.tridiagonal_eigh(
            diagonals.contiguous(), off[:, : size - 1].contiguous()
        )
        yield starts, size, eigenvalues, rows


def _merge(merges: list, values: Tensor, solved: dict, e: Tensor, betas: list) -> Tensor:
    """The merges (lo, mid, hi) of one height: their blocks' eigenvalues (in `values` at
    their rows) and vectors (`solved`, by first row) become the merged block's, in a
    new values array (returned) and `solved[lo]`; e is T's off-diagonal."""
    dtype = values.dtype
    merged = values.clone()  # the blocks merged at a later height keep theirs
    split = [m for m in merges if betas[m[1] - 1] == 0]
    coupled = [m for m in merges if betas[m[1] - 1] != 0]
    sizes = [hi - lo for lo, _, hi in coupled]
    lds = [n + PAD if n * dtype.itemsize % 1024 == 0 else n for n in sizes]
    floats, ints = zip(*(secular.work_sizes(n) for n in sizes), strict=True) if sizes else ((), ())
    columns = factories.empty(
        max(1, sum(n * ld for n, ld in zip(sizes, lds, strict=True))), dtype=dtype
    )
    ut = factories.empty(max(1, sum(n * n for n in sizes)), dtype=dtype)
    work = factories.empty(max(1, sum(floats)), dtype=dtype)
    index = factories.empty(max(1, sum(ints)), dtype=int64)
    item = dtype.itemsize
    base = {name: host_ptr(t._impl, "linalg.eigh") for name, t in
            (("values", values), ("merged", merged), ("e", e), ("ut", ut), ("work", work),
             ("index", index))}  # fmt: skip
    blocks, groups = [], {}
    at = {"columns": 0, "ut": 0, "work": 0, "index": 0}
    for (lo, mid, _), n, ld, f, i in zip(coupled, sizes, lds, floats, ints, strict=True):
        first, second = solved[lo], solved[mid]
        n1 = mid - lo
        u = base["ut"] + at["ut"] * item
        blocks.append([
            base["values"] + lo * item, base["values"] + mid * item,
            first.address(n1 - 1), second.address(), base["e"] + (mid - 1) * item,
            u, base["merged"] + lo * item, base["work"] + at["work"] * item,
            base["index"] + at["index"] * 8, n, n1,
        ])  # fmt: skip
        out = _Solved(columns, at["columns"], ld)
        key = (n, n1, first.ld, second.ld)
        groups.setdefault(key, []).append((first, second, u, out))
        solved[lo] = out
        at["columns"] += n * ld
        at["ut"] += n * n
        at["work"] += f
        at["index"] += i
    if blocks:
        secular.merges(dtype, blocks)
    for (n, n1, _, _), members in groups.items():
        _products(n, n1, members, ut)
    for lo, mid, hi in split:
        _concatenate(lo, mid, hi, merged, solved)
    return merged


def _products(n: int, n1: int, members: list, ut: Tensor) -> None:
    """Each merge's vectors (`members`: its blocks' solved, ut's address, its output's
    solved): its first block's vectors times U's first n1 rows (U = ut^T), its second's
    times the rest, each of the two products one run of launches over the merges."""
    item = ut.dtype.itemsize
    start = (members[0][2] - host_ptr(ut._impl, "linalg.eigh")) // item
    u = ut.as_strided((n, n), (n, 1), start)  # the first merge's
    out = members[0][3]
    for which, rows, row0 in ((0, n1, 0), (1, n - n1, n1)):
        block = members[0][which].view(rows, rows)
        c = out.owner.as_strided((rows, n), (out.ld, 1), out.offset + row0 * out.ld)
        plan = gemm_run.plan_for(block._impl, u[:, row0 : row0 + rows].mT._impl, c._impl)
        operands = [(m[which].address(), m[2] + row0 * item, m[3].address(row0)) for m in members]
        gemm_run.products(plan, operands)


def _concatenate(lo: int, mid: int, hi: int, values: Tensor, solved: dict) -> None:
    """A split where beta is 0: the blocks' eigenpairs side by side, in ascending order."""
    n, n1 = hi - lo, mid - lo
    first, second = solved[lo], solved[mid]
    both = values[lo:hi].clone()
    order = both.argsort(stable=True)
    columns = factories.zeros((n, n), dtype=values.dtype)
    columns[:n1, :n1] = first.view(n1, n1)
    columns[n1:, n1:] = second.view(n - n1, n - n1)
    values[lo:hi] = both[order]
    solved[lo] = _Solved(columns[:, order].contiguous().reshape(-1), 0, n)
