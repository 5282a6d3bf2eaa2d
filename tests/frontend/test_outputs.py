"""outputs.pair_out: the out= form of the ops that return values and indices (sort, topk,
kthvalue, median, nanmedian, mode, cummax, cummin) writes both into the caller's pair as
torch does: resized to the result (warning when a tensor held elements), dtypes checked,
the same tensors returned; msort's single out= likewise."""

import warnings

import numpy as np
import pytest
import torch

import kael

PAIR_OPS = {
    "sort": (1,),
    "topk": (2,),
    "kthvalue": (2, 1),
    "median": (1,),
    "nanmedian": (1,),
    "mode": (1,),
    "cummax": (1,),
    "cummin": (1,),
}
ROWS = [[3.0, 1.0, 2.0, 1.0], [0.0, -1.0, 5.0, float("nan")]]


def _pair(lib, value_shape=(0,), index_shape=(0,)):
    return lib.empty(*value_shape), lib.empty(*index_shape, dtype=lib.int64)


@pytest.mark.parametrize("op", list(PAIR_OPS))
def test_out_pair_gets_torchs_values_and_indices_and_is_returned(op):
    args = PAIR_OPS[op]
    k_out, t_out = _pair(kael), _pair(torch)
    got = getattr(kael, op)(kael.tensor(ROWS), *args, out=k_out)
    getattr(torch, op)(torch.tensor(ROWS), *args, out=t_out)
    assert got.values is k_out[0] and got.indices is k_out[1]
    for k, t in zip(k_out, t_out):
        assert tuple(k.shape) == tuple(t.shape)
        np.testing.assert_array_equal(k.numpy(), t.numpy())


@pytest.mark.parametrize("op", ["sort", "kthvalue"])
def test_out_pair_that_held_elements_is_resized_with_torchs_warning(op):
    k_out = _pair(kael, (5,), (5,))
    with pytest.warns(UserWarning, match="was resized"):
        getattr(kael, op)(kael.tensor(ROWS), *PAIR_OPS[op], out=k_out)
    right = _pair(kael, (2, 4), (2, 4)) if op == "sort" else _pair(kael, (2,), (2,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the result's own shape: no warning
        getattr(kael, op)(kael.tensor(ROWS), *PAIR_OPS[op], out=right)


def test_out_pair_of_another_dtype_or_not_a_pair_is_refused_naming_it():
    x = kael.tensor(ROWS)
    wrong = (kael.empty(0, dtype=kael.float64), kael.empty(0, dtype=kael.int64))
    with pytest.raises(kael.TypeError, match="dtype float32, but got float64"):
        kael.sort(x, out=wrong)
    with pytest.raises(kael.TypeError, match="dtype int64, but got int32"):
        kael.topk(x, 2, out=(kael.empty(0), kael.empty(0, dtype=kael.int32)))
    with pytest.raises(kael.TypeError, match="pair of tensors, got Tensor"):
        kael.sort(x, out=kael.empty(3))
    with pytest.raises(kael.TypeError, match="two tensors, got a list"):
        kael.mode(x, 1, out=(kael.empty(0), [0]))


def test_median_out_needs_a_dim_and_msort_writes_its_one_out():
    x = kael.tensor(ROWS)
    with pytest.raises(kael.TypeError, match="needs a dim"):
        kael.median(x, out=_pair(kael))
    out = kael.empty(0)
    assert kael.msort(x, out=out) is out
    np.testing.assert_array_equal(out.numpy(), torch.msort(torch.tensor(ROWS)).numpy())
