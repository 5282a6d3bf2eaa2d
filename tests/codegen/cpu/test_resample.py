"""The separable resampling kernels (codegen/cpu/resample.py): the last-dim (gathered) and
row (weighted rows) passes for 1, 2 and 4 taps, sizes past a vector and a block, against
PyTorch's interpolate."""

import numpy as np
import pytest
import torch.nn.functional as TF
from parity_helpers import close_to_torch
from parity_helpers import torch_pair as pair

import kael
import kael.nn.functional as KF
from kael.codegen.cpu import resample
from kael.frontend.inspection import record_launches

RNG = np.random.default_rng(13)


@pytest.mark.parametrize(
    "shape, kwargs",
    [
        ((2, 3, 17, 19), {"scale_factor": 2, "mode": "bilinear"}),
        ((1, 2, 8, 16), {"scale_factor": 2, "mode": "bilinear"}),  # whole vectors only
        ((1, 2, 9, 40), {"size": (20, 13), "mode": "bilinear", "align_corners": True}),
        ((2, 3, 17, 19), {"size": (33, 7), "mode": "bicubic"}),
        ((1, 2, 6, 5), {"size": (11, 37), "mode": "bicubic", "align_corners": True}),
        ((2, 3, 17, 19), {"scale_factor": 3, "mode": "nearest"}),
        ((2, 3, 30), {"size": 47, "mode": "linear"}),
        ((2, 3, 100), {"size": 17, "mode": "linear"}),  # downsampling
        ((1, 2, 5, 6, 7), {"scale_factor": 2, "mode": "trilinear"}),
        ((2, 3, 17, 19), {"size": (8, 9), "mode": "nearest-exact"}),
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_passes_match_torch(shape, kwargs, dtype):
    kx, tx = pair(RNG.standard_normal(shape), dtype)
    k, launched = record_launches(KF.interpolate, kx, **kwargs)
    close_to_torch(k, TF.interpolate(tx, **kwargs), 5e-6 if dtype is kael.float32 else 1e-13)
    taps = {"nearest": 1, "nearest-exact": 1, "bicubic": 4}.get(kwargs["mode"], 2)
    symbols = {x.symbol for x in launched}
    assert resample.symbol(taps, True) in symbols  # the last dim
    if len(shape) > 3:
        assert resample.symbol(taps, False) in symbols  # the dims before it


def test_strided_input_and_special_values():
    kx, tx = pair(RNG.standard_normal((2, 3, 12, 10)))
    kx[0, 0, 3, 4] = tx[0, 0, 3, 4] = float("inf")
    kx[1, 2, 0, 0] = tx[1, 2, 0, 0] = float("nan")
    args = {"size": (25, 21), "mode": "bilinear"}
    close_to_torch(
        KF.interpolate(kx.transpose(2, 3), **args),
        TF.interpolate(tx.transpose(2, 3), **args),
        5e-6,
        equal_nan=True,
    )


def test_half_types_resample_in_float32_and_integers_take_index_select():
    kx, tx = pair(RNG.standard_normal((1, 2, 5, 6)), kael.float16)
    k, launched = record_launches(KF.interpolate, kx, scale_factor=2, mode="bilinear")
    close_to_torch(k, TF.interpolate(tx, scale_factor=2, mode="bilinear"), 2e-3)
    assert resample.symbol(2, True) in {x.symbol for x in launched}
    kx, tx = pair(RNG.integers(0, 255, (1, 2, 5, 6)), kael.uint8)
    k, launched = record_launches(KF.interpolate, kx, scale_factor=2, mode="nearest")
    close_to_torch(k, TF.interpolate(tx, scale_factor=2, mode="nearest"), 0)
    assert not any(x.symbol.startswith("kael_resample") for x in launched)
