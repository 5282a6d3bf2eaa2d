"""kael.finfo and kael.iinfo against torch.finfo and torch.iinfo: every field, the repr,
the default dtype, equality, and the typed errors for a dtype of the other kind."""

import pytest
import torch

import kael

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int64", "int32", "int16", "int8", "uint8"]


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_fields_and_repr_are_torchs(name):
    got, want = kael.finfo(getattr(kael, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(got, field) == getattr(want, field), field
    assert got.dtype == want.dtype == name
    assert repr(got) == repr(want)


@pytest.mark.parametrize("name", INTS)
def test_iinfo_fields_and_repr_are_torchs(name):
    got, want = kael.iinfo(getattr(kael, name)), torch.iinfo(getattr(torch, name))
    assert (got.bits, got.min, got.max, got.dtype) == (want.bits, want.min, want.max, name)
    assert repr(got) == repr(want)


def test_finfo_without_a_dtype_is_the_default_dtypes():
    assert kael.finfo() == kael.finfo(kael.float32)
    kael.set_default_dtype(kael.float64)
    try:
        assert kael.finfo().dtype == "float64"
    finally:
        kael.set_default_dtype(kael.float32)


def test_infos_are_equal_by_dtype_only():
    assert kael.finfo(kael.float16) == kael.finfo(kael.float16)
    assert kael.finfo(kael.float16) != kael.finfo(kael.bfloat16)
    assert kael.iinfo(kael.int8) == kael.iinfo(kael.int8)
    assert kael.iinfo(kael.int8) != kael.iinfo(kael.uint8)
    assert len({kael.finfo(kael.float32), kael.finfo(kael.float32)}) == 1


@pytest.mark.parametrize("dtype", [kael.int32, kael.bool, "float32", None.__class__])
def test_finfo_of_anything_but_a_float_dtype_is_a_type_error(dtype):
    with pytest.raises(kael.TypeError, match="finfo\\(\\) requires a floating point input type"):
        kael.finfo(dtype)


@pytest.mark.parametrize("dtype", [kael.float32, kael.bfloat16, "int32"])
def test_iinfo_of_a_float_or_no_dtype_is_a_type_error(dtype):
    with pytest.raises(kael.TypeError, match="iinfo\\(\\) requires an integer input type"):
        kael.iinfo(dtype)


def test_iinfo_of_bool_is_refused_as_torch_does():
    with pytest.raises(kael.TypeError, match="kael.bool is not supported by kael.iinfo"):
        kael.iinfo(kael.bool)
