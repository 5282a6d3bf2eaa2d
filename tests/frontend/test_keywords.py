"""NumPy's keyword names, which PyTorch's argument parser accepts for every op: axis= for
dim= and keepdims= for keepdim=, on functions and methods alike."""

import numpy as np
import pytest
import torch
from parity_helpers import same

import kael

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7


def both(fn):
    return fn(kael, kael.from_numpy(X.copy())), fn(torch, torch.from_numpy(X.copy()))


CALLS = {
    "sum_axis": lambda L, x: L.sum(x, axis=1),
    "sum_method_axis_keepdims": lambda L, x: x.sum(axis=(0, 2), keepdims=True),
    "mean_keepdims": lambda L, x: L.mean(x, 2, keepdims=True),
    "amax_axis": lambda L, x: x.amax(axis=-1),
    "max_axis_values": lambda L, x: L.max(x, axis=0).values,
    "argmin_axis": lambda L, x: x.argmin(axis=2, keepdims=True),
    "std_axis": lambda L, x: L.std(x, axis=1),
    "any_axis": lambda L, x: (x > 3).any(axis=0),
    "softmax_axis": lambda L, x: L.softmax(x, axis=1),
    "cumsum_axis": lambda L, x: L.cumsum(x, axis=2),
    "cat_axis": lambda L, x: L.cat([x, x], axis=1),
    "sort_axis": lambda L, x: L.sort(x, axis=0).values,
}


@pytest.mark.parametrize("name", CALLS)
def test_numpy_keywords_match_torch(name):
    got, want = both(CALLS[name])
    same(got, want)


def test_a_dim_given_twice_is_refused():
    x = kael.ones(2, 3)
    with pytest.raises(kael.TypeError, match="got both 'axis' and 'dim'"):
        x.sum(axis=0, dim=1)
    with pytest.raises(kael.TypeError, match="got both 'keepdims' and 'keepdim'"):
        kael.mean(x, 0, keepdim=True, keepdims=True)
