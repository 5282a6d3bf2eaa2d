"""default_collate and default_convert against torch's: the same batch structure, shapes,
dtypes and values for every kind of sample torch collates, and its refusals."""

import collections

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import kael
from kael.utils.data import default_collate, default_convert

Point = collections.namedtuple("Point", ["x", "y"])


def _as_lib(sample, lib):
    """A sample description with tensors of `lib` ('T' marks one)."""
    if isinstance(sample, tuple) and sample and sample[0] == "T":
        return lib.tensor(sample[1])
    if isinstance(sample, dict):
        return {k: _as_lib(v, lib) for k, v in sample.items()}
    if isinstance(sample, Point):
        return Point(*(_as_lib(v, lib) for v in sample))
    if isinstance(sample, list):
        return [_as_lib(v, lib) for v in sample]
    return sample


def _same(got, want):
    if isinstance(want, torch.Tensor):
        assert isinstance(got, kael.Tensor) and got.shape == tuple(want.shape)
        assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    elif isinstance(want, dict):
        assert type(got) is type(want) and list(got) == list(want)
        for key in want:
            _same(got[key], want[key])
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    else:
        assert got == want


SAMPLES = {
    "tensors": [("T", [1.0, 2.0]), ("T", [3.0, 4.0])],
    "python_floats_are_float64": [1.5, 2.5],
    "python_ints_are_int64": [1, 2, 3],
    "bools": [True, False],
    "strings_stay_a_list": ["a", "b"],
    "numpy_arrays": [np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)],
    "numpy_scalars": [np.float32(1), np.float32(2)],
    "numpy_int_scalars": [np.int16(1), np.int16(2)],
    # mixed numpy scalars promote by torch's inference, not NumPy's (float32 + 2.5: float32)
    "numpy_float32_beside_a_python_float": [np.float32(1.5), 2.5],
    "numpy_int64_beside_float32": [np.int64(1), np.float32(2.5)],
    "numpy_float16_beside_a_python_float": [np.float16(1), 2.0],
    "numpy_uint8_beside_int8": [np.uint8(3), np.int8(-1)],
    "dicts_by_key": [{"a": 1, "b": ("T", [1])}, {"a": 2, "b": ("T", [2])}],
    "tuples_become_lists": [(1, 2.0), (3, 4.0)],
    "lists": [[1, 2], [3, 4]],
    "named_tuples_keep_their_type": [Point(1, 2.0), Point(3, 4.0)],
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_default_collate_matches_torch(name):
    batch = SAMPLES[name]
    _same(default_collate(_as_lib(batch, kael)), tdata.default_collate(_as_lib(batch, torch)))


def test_collate_refuses_unequal_sequences_and_objects():
    with pytest.raises(RuntimeError, match="equal size"):
        tdata.default_collate([[1, 2], [3]])
    with pytest.raises(kael.Error, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(kael.TypeError, match="batch must contain tensors, numpy arrays, numbers"):
        default_collate([object(), object()])
    with pytest.raises(kael.TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_collate_of_tensors_of_different_shapes_is_a_typed_error():
    with pytest.raises(kael.Error):
        default_collate([kael.ones(2), kael.ones(3)])


def test_default_convert_makes_arrays_tensors_only():
    sample = {"a": np.arange(3), "b": (np.float64(2.0), "s"), "c": 7}
    got, want = default_convert(sample), tdata.default_convert(sample)
    assert isinstance(got["a"], kael.Tensor) and got["a"].tolist() == want["a"].tolist()
    assert isinstance(got["b"], list) and got["b"][1] == "s" and got["c"] == 7
    assert got["b"][0].item() == 2.0 and got["b"][0].dtype is kael.float64


def test_numpy_strings_and_strings_in_tuples_stay_as_torch_keeps_them():
    batch = [np.str_("a"), np.str_("b")]
    assert default_collate(batch) == tdata.default_collate(batch) == ["a", "b"]
    got = default_collate([(1, "a"), (2, "b")])
    assert got[1] == tdata.default_collate([(1, "a"), (2, "b")])[1] == ("a", "b")
