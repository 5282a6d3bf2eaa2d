"""kael's error classes: each is a kael.Error and the Python builtin of its name."""

import builtins

import pytest

from kael.runtime import dtypes, errors
from kael.runtime.allocator import block_capacity
from kael.runtime.convert import convert_scalar
from kael.runtime.device import parse_device
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl


def test_error_is_a_runtime_error():
    assert issubclass(errors.Error, RuntimeError)


@pytest.mark.parametrize("name", ["IndexError", "ValueError", "TypeError"])
def test_each_kind_is_a_kael_error_and_its_builtin(name):
    cls = getattr(errors, name)
    assert issubclass(cls, errors.Error)
    assert issubclass(cls, getattr(builtins, name))
    with pytest.raises(getattr(builtins, name), match="boom"):
        raise cls("boom")


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (lambda: Storage(-1), errors.ValueError),
        (lambda: parse_device("gpu"), errors.ValueError),
        (lambda: convert_scalar("1", dtypes.float32), errors.TypeError),
        (lambda: dtypes.as_dtype("float8"), errors.TypeError),
        (lambda: block_capacity(2**62 + 1), errors.Error),
        (
            lambda: TensorImpl(
                Storage(4), (2,), (1,), 0, dtypes.float32, parse_device("cpu")
            ).validate(),
            errors.Error,
        ),
    ],
    ids=[
        "negative-size",
        "unknown-device",
        "non-number",
        "unknown-dtype",
        "huge-block",
        "too-small",
    ],
)
def test_representative_failures_raise_the_expected_kind(failure, expected):
    with pytest.raises(expected) as info:
        failure()
    assert type(info.value) is expected
