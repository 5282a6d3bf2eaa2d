"""kael.nn.Unflatten's checks of unflattened_size, as torch's: a tuple or list of ints."""

import pytest
import torch

import kael

LIBS = pytest.mark.parametrize("lib", [torch, kael], ids=["torch", "kael"])


@LIBS
@pytest.mark.parametrize(
    ("size", "message"),
    [(3, "unflattened_size must be a tuple of ints, but found type int"),
     ("ab", "unflattened_size must be a tuple of ints, but found type str"),
     ((2.0, 3), "must be tuple of ints, but found element of type float at pos 0"),
     ([2, "3"], "must be tuple of ints, but found element of type str at pos 1")],
)  # fmt: skip
def test_unflatten_refuses_a_size_that_is_not_a_sequence_of_ints(lib, size, message):
    error = kael.TypeError if lib is kael else TypeError
    with pytest.raises(error, match=message):
        lib.nn.Unflatten(1, size)


@LIBS
@pytest.mark.parametrize("size", [(2, 3), [2, 3], (-1, 3), "Size"])
def test_unflatten_takes_tuples_lists_and_sizes(lib, size):
    size = lib.Size([2, 3]) if size == "Size" else size
    layer = lib.nn.Unflatten(1, size)
    assert tuple(layer(lib.ones(4, 6, 5)).shape) == (4, 2, 3, 5)
    assert repr(layer) == f"Unflatten(dim=1, unflattened_size={size})"
