"""The implicit-GEMM convolution kernels (codegen/cpu/conv.py, conv_run.py): their blocking
edges (k blocks, column blocks, output-channel blocks, panels past the last channel), both
ways of packing the window matrix (unit walk and gather), against PyTorch."""

import numpy as np
import pytest
import torch.nn.functional as TF
from parity_helpers import close_to_torch
from parity_helpers import torch_pair as pair

import kael
import kael.nn.functional as KF
from kael.codegen.cpu import conv, conv_run, gemm
from kael.frontend.inspection import record_launches
from kael.ir.conv import ConvGeometry

RNG = np.random.default_rng(5)


def _conv(x_shape, w_shape, dtype=kael.float32, **kwargs):
    """(kael's, torch's) convolution of random operands, and kael's launch names."""
    dims = len(x_shape) - 2
    kx, tx = pair(RNG.standard_normal(x_shape), dtype)
    kw, tw = pair(RNG.standard_normal(w_shape), dtype)
    k, launched = record_launches(getattr(KF, f"conv{dims}d"), kx, kw, **kwargs)
    return k, getattr(TF, f"conv{dims}d")(tx, tw, **kwargs), [x.symbol for x in launched]


@pytest.mark.parametrize(
    "x_shape, w_shape, kwargs",
    [
        ((2, 5, 9, 9), (7, 5, 3, 3), {"padding": 1}),  # channels not a multiple of mr
        ((1, 64, 6, 6), (13, 64, 3, 3), {"padding": 1}),  # K = 576: three k blocks
        ((2, 3, 20, 19), (6, 3, 3, 3), {"padding": 1}),  # P = 380: two column blocks
        ((1, 4, 40, 40), (8, 4, 1, 1), {}),  # P = 1600: seven blocks, the last partial
        ((1, 300, 5, 5), (70, 300, 3, 3), {"padding": 1}),  # few items: channel blocks
        ((2, 4, 9, 8), (6, 4, 3, 3), {"padding": (2, 1), "dilation": (2, 1)}),
        ((1, 4, 9, 11), (6, 4, 2, 4), {"padding": "same"}),  # padding after > before
    ],
    ids=str,
)
def test_unit_walk_blocking_matches_torch(x_shape, w_shape, kwargs):
    k, t, launched = _conv(x_shape, w_shape, **kwargs)
    close_to_torch(k, t, 2e-4)
    assert conv.CONV in launched and "kael_gemm_macro" not in launched


@pytest.mark.parametrize(
    "x_shape, w_shape, kwargs",
    [
        ((2, 4, 9, 8), (6, 4, 3, 3), {}),  # valid: output rows narrower than the input's
        ((2, 4, 11, 10), (6, 4, 3, 3), {"stride": 2, "padding": 1}),
        ((2, 4, 11, 10), (6, 4, 3, 2), {"stride": (1, 3), "dilation": (2, 1)}),
        ((1, 2, 5, 6, 7), (3, 2, 3, 3, 3), {}),  # 3-d, planes narrower
        ((2, 3, 17), (4, 3, 4), {"stride": 3, "padding": 2}),
    ],
    ids=str,
)
def test_gathered_windows_match_torch(x_shape, w_shape, kwargs):
    k, t, launched = _conv(x_shape, w_shape, **kwargs)
    close_to_torch(k, t, 2e-4)
    assert conv.CONV in launched


def test_unit_walk_is_chosen_exactly_where_rows_keep_their_width():
    def geometry(size, out, stride=(1, 1)):
        return ConvGeometry.of(1, 1, 1, 1, size, (3, 3), stride, (1, 1), (1, 1), out)

    assert geometry((8, 8), (8, 8)).unit_walk
    assert geometry((8, 8), (6, 8)).unit_walk  # fewer rows: still one run per window row
    assert not geometry((8, 8), (8, 6)).unit_walk
    assert not geometry((8, 8), (4, 8), (2, 1)).unit_walk
    three = ConvGeometry.of(
        1, 1, 1, 1, (4, 8, 8), (3, 3, 3), (1,) * 3, (1,) * 3, (1,) * 3, (4, 6, 8)
    )
    assert not three.unit_walk  # planes narrower than the input's


def test_float64_and_groups_take_the_kernel():
    k, t, launched = _conv((2, 6, 9, 9), (9, 2, 3, 3), kael.float64, padding=1, groups=3)
    close_to_torch(k, t, 1e-11)
    assert conv.CONV in launched


def test_half_types_and_empty_work_take_im2col():
    k, t, launched = _conv((1, 3, 6, 6), (4, 3, 3, 3), kael.float16, padding=1)
    close_to_torch(k, t, 2e-2)
    assert conv.CONV not in launched
    k, t, launched = _conv((0, 3, 6, 6), (4, 3, 3, 3))
    close_to_torch(k, t, 0)
    assert conv.CONV not in launched


def test_blocking_limits():
    """k blocks never exceed the stack block, column blocks hold whole panels."""
    spec = gemm.host_spec(kael.float32)
    for depth in (1, conv.kc_max(spec), conv.kc_max(spec) + 1, 4608):
        g = ConvGeometry.of(1, 1, depth, 8, (16, 16), (1, 1), (1, 1), (1, 1), (0, 0), (16, 16))
        words = conv_run.plan(g, kael.float32, 2).launches[1].words
        kc, nc = words[conv.CONV_ARGS.index("kc")], words[conv.CONV_ARGS.index("nc")]
        assert 0 < kc <= conv.kc_max(spec) and -(-depth // kc) * kc >= depth
        assert nc % spec.nr == 0 and nc <= conv.NC


def test_result_bits_do_not_depend_on_the_thread_count():
    kx, _ = pair(RNG.standard_normal((2, 16, 20, 20)))
    kw, _ = pair(RNG.standard_normal((24, 16, 3, 3)))
    before = kael.get_num_threads()
    try:
        kael.set_num_threads(1)
        one = KF.conv2d(kx, kw, padding=1)
        kael.set_num_threads(2)
        two = KF.conv2d(kx, kw, padding=1)
    finally:
        kael.set_num_threads(before)
    assert kael.equal(one, two)


def test_unsupported_sizes_fall_back():
    g = ConvGeometry.of(
        1, 1, 1, 1, (1 << 16, 1 << 15), (1, 1), (1, 1), (1, 1), (0, 0), (1 << 16, 1 << 15)
    )
    assert not conv_run.supports(g, kael.float32)  # offsets past 32-bit lanes
    assert not conv_run.supports(g, kael.float16)
