"""kael.nn's ParameterDict methods that follow dict's, as torch's: popitem and fromkeys."""

import pytest
import torch

import kael

LIBS = pytest.mark.parametrize("lib", [torch, kael], ids=["torch", "kael"])


def _entries(lib):
    return lib.nn.ParameterDict({"b": lib.ones(2), "a": lib.zeros(3, 2)})


@LIBS
def test_popitem_removes_the_last_entered_pair(lib):
    params = _entries(lib)
    params["c"] = lib.full((1,), 5.0)
    key, value = params.popitem()
    assert key == "c" and isinstance(value, lib.nn.Parameter) and value.tolist() == [5.0]
    assert list(params.keys()) == ["a", "b"]  # a mapping's keys entered sorted, as torch's
    assert list(params.state_dict()) == ["a", "b"]
    assert [params.popitem()[0], params.popitem()[0]] == ["b", "a"]


@LIBS
def test_popitem_of_an_empty_dict_raises_key_error(lib):
    error = kael.KeyError if lib is kael else KeyError
    with pytest.raises(error, match=r"popitem\(\): dictionary is empty"):
        lib.nn.ParameterDict().popitem()


@LIBS
def test_fromkeys_makes_a_new_dict_with_one_default_per_key(lib):
    params = _entries(lib)
    made = params.fromkeys(["x", "y"], lib.ones(1))
    assert type(made).__name__ == "ParameterDict" and made is not params
    assert list(made.keys()) == ["x", "y"] and list(params.keys()) == ["a", "b"]
    assert isinstance(made["x"], lib.nn.Parameter) and made["x"] is not made["y"]
    shared = lib.nn.Parameter(lib.ones(1))
    again = params.fromkeys(("p", "q"), shared)
    assert again["p"] is shared and again["q"] is shared
