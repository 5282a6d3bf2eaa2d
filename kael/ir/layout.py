"""From the shapes and strides of one launch to the kernel's rank and layout class.

The TensorIterator step, done once per launch on small tuples: drop size-1 dimensions,
order the dimensions by the output's strides, merge dimensions that are contiguous
with each other in every buffer, then classify each buffer's innermost stride. A
contiguous tensor of any rank becomes one flat loop. When an input is transposed
relative to the output, its unit-stride dimension moves next to the innermost one and
the kernel walks both in tiles, so neither side streams with a large stride.
"""

from __future__ import annotations

from dataclasses import dataclass

from kael.ir.kernel import BCAST, CONTIG, PAIRS, STRIDED, TRANSPOSED

TILE_MIN = 16  # both tiled dimensions must be at least this long for tiles to pay


@dataclass(frozen=True, slots=True)
class Layout:
    sizes: tuple[int, ...]
    strides: tuple[tuple[int, ...], ...]  # per buffer, outputs first
    inners: tuple[str, ...]
    tiled: bool

    @property
    def rank(self) -> int:
        return len(self.sizes)


def _inner_kind(stride: int) -> str:
    return {1: CONTIG, 0: BCAST, 2: PAIRS}.get(stride, STRIDED)


def plan(shape: tuple[int, ...], strides: list[tuple[int, ...]], keep_dims: bool = False) -> Layout:
    """The loop layout for buffers of `shape` with `strides` (outputs first).

    `keep_dims` keeps every dimension in place, for kernels that read their position.
    """
    dims = list(range(len(shape)))
    if not keep_dims:
        dims = [d for d in dims if shape[d] != 1]
        out = strides[0]
        dims.sort(key=lambda d: -out[d])  # stable: equal strides keep their order
    sizes = [shape[d] for d in dims]
    per = [[st[d] for d in dims] for st in strides]
    if not keep_dims:
        sizes, per = coalesce(sizes, per)
    if not sizes:
        return Layout((1,), tuple((0,) for _ in strides), tuple(CONTIG for _ in strides), False)
    tiled = False
    if not keep_dims and len(sizes) >= 2 and per[0][-1] == 1:
        sizes, per, tiled = _tile_transposed(sizes, per)
    inners = tuple(
        TRANSPOSED if tiled and st[-2] == 1 and st[-1] > 1 else _inner_kind(st[-1]) for st in per
    )
    return Layout(tuple(sizes), tuple(tuple(st) for st in per), inners, tiled)


def coalesce(sizes: list[int], per: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """Merge dimension d into d+1 wherever every buffer steps over it contiguously."""
    if not sizes:
        return sizes, per
    out_sizes = [sizes[0]]
    out_per = [[st[0]] for st in per]
    for d in range(1, len(sizes)):
        if all(o[-1] == st[d] * sizes[d] for o, st in zip(out_per, per)):
            out_sizes[-1] *= sizes[d]
            for o, st in zip(out_per, per):
                o[-1] = st[d]
        else:
            out_sizes.append(sizes[d])
            for o, st in zip(out_per, per):
                o.append(st[d])
    return out_sizes, out_per


def _tile_transposed(sizes, per):
    """Bring the unit-stride dimension of a transposed input next to the innermost one."""
    for st in per[1:]:
        if st[-1] in (0, 1):
            continue
        unit = [d for d in range(len(sizes) - 1) if st[d] == 1]
        if not unit:
            continue
        d = unit[-1]
        if sizes[d] < TILE_MIN or sizes[-1] < TILE_MIN:
            return sizes, per, False
        order = [i for i in range(len(sizes) - 1) if i != d] + [d, len(sizes) - 1]
        return [sizes[i] for i in order], [[s[i] for i in order] for s in per], True
    return sizes, per, False
