"""Float sums and products on the GPU, a warp a block (codegen/ptx/warp_reduce.py): the
CPU's bits on both sides of every limit of its order, the accumulators (32 or 64), the
float32 runs (1024 elements), the blocks (16384), a CTA's group of blocks and the second
kernel's tree over the groups."""

from __future__ import annotations

import numpy as np
import pytest

import kael
from kael.codegen.ptx import warp_reduce
from kael.ir.reduction import BLOCK

pytestmark = pytest.mark.gpu
DEVICE = "cuda"


def _same_bits(got: kael.Tensor, want: kael.Tensor) -> None:
    g, w = np.atleast_1d(got.cpu().numpy()), np.atleast_1d(want.numpy())
    assert g.dtype == w.dtype and g.shape == w.shape
    np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))


def _data(shape, dtype, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape) * 1e3
    return kael.tensor(values).to(dtype)


@pytest.fixture
def launches(monkeypatch):
    """The (reduction name, blocks, outputs) of every launch that ran here."""
    seen = []
    launch = warp_reduce.launch

    def watched(red, words, plan, moved):
        seen.append((red.name, plan.blocks, plan.outputs))
        launch(red, words, plan, moved)

    monkeypatch.setattr(warp_reduce, "launch", watched)
    return seen


# the float32 sum's 64 accumulators and 1024-element runs, float64's 32 accumulators,
# a half sum's 64 float32 accumulators: lengths on both sides of each
LENGTHS = [1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1023, 1024, 1025, 1090, BLOCK - 1, BLOCK]


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.float16], ids=str)
@pytest.mark.parametrize("n", LENGTHS)
def test_a_one_block_sum_gives_the_cpus_bits_at_every_length(dtype, n, launches):
    a = _data(n, dtype, n)
    _same_bits(a.to(DEVICE).sum(), a.sum())
    if n >= 16:  # rows shorter than the CPU's vector may take its lane-by-lane variant
        assert launches[-1][1:] == (1, 1)


@pytest.mark.parametrize("blocks", [2, 8, 9, 10])
def test_blocks_fold_by_the_cpus_tree_inside_a_cta_and_across_groups(blocks, launches):
    # up to 8 blocks: one CTA's group; 9 and 10: two groups, the second kernel's tree
    a = _data(blocks * BLOCK - 7, kael.float32, blocks)
    _same_bits(a.to(DEVICE).sum(), a.sum())
    _same_bits(a.to(DEVICE).mean(), a.mean())
    assert launches[-1][1] == blocks


@pytest.mark.parametrize("spread", [2, 4])
def test_warps_taking_several_blocks_keep_the_cpus_tree(spread, monkeypatch, launches):
    # an output's blocks beyond 8 x 2048 groups: each warp takes `spread` of its CTA's
    monkeypatch.setattr(warp_reduce, "spread", lambda blocks: spread)
    a = _data(20 * BLOCK + 3, kael.float64, spread)
    _same_bits(a.to(DEVICE).sum(), a.sum())
    assert launches[-1][1] == 21


@pytest.mark.parametrize("op", ["sum", "mean", "var", "std", "norm", "prod"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_a_warp_an_output_gives_the_cpus_bits(op, dtype, launches):
    # 13 outputs: a CTA's 8 warps take 8 rows, the second CTA's last 3 warps have none
    a = _data((13, 700), dtype, 3)
    if op == "prod":
        a = a / 1e3 * 0.05 + 1.0
    fn = getattr(kael, op)
    _same_bits(fn(a.to(DEVICE), dim=1), fn(a, dim=1))
    assert launches and all(outputs == 13 for _, _, outputs in launches)


def test_var_pairs_and_strided_rows_keep_the_cpus_bits(launches):
    a = _data((40, 96), kael.float32, 4)
    rows = a[:, ::3]  # every third element: strided lanes
    _same_bits(rows.to(DEVICE).var(1), rows.var(1))
    _same_bits(a.to(DEVICE).var(1, correction=0), a.var(1, correction=0))
    assert launches


def test_sums_the_warps_do_not_take_keep_the_host_order_kernels(launches):
    a = _data((30, 50, 7), kael.float64, 5)
    # COLS (the contiguous last dim kept) and two reduced dims that do not merge
    _same_bits(a.to(DEVICE).sum(0), a.sum(0))
    _same_bits(a.to(DEVICE).sum((0, 2)), a.sum((0, 2)))
    assert launches == []


@pytest.mark.parametrize(
    ("blocks", "spread"),
    [(1, 1), (8 * 2048, 1), (8 * 2048 + 1, 2), (8 * 2048 * 32, 32), (8 * 2048 * 32 + 1, 64)],
)
def test_a_warp_takes_the_fewest_blocks_that_keep_2048_groups(blocks, spread, monkeypatch):
    assert warp_reduce.spread(blocks) == spread
    assert -(-blocks // (warp_reduce.WARPS * spread)) <= warp_reduce.MAX_GROUPS
    taken = []
    monkeypatch.setattr(warp_reduce, "launch", lambda red, *rest: taken.append(red))
    kael.ones(100, device=DEVICE).sum()
    plan = type("Plan", (), {"blocks": blocks})()
    assert warp_reduce.eligible(taken[0], plan) == (spread <= warp_reduce.MAX_SPREAD)
