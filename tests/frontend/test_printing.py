"""Printing: PyTorch's nested-bracket layout with the book's fields and number formats."""

import math
import re

import pytest
import torch

import kael


@pytest.fixture(autouse=True)
def torch_prints_like_the_book():
    """Fixed 4 decimals in PyTorch too, so float layouts can be compared character by character."""
    torch.set_printoptions(precision=4, sci_mode=False)
    yield
    torch.set_printoptions(profile="default")


def expected_text(t: torch.Tensor, dtype: str) -> str:
    """PyTorch's text of t with the book's fields in place of PyTorch's suffix."""
    text = str(t)
    body = re.split(r",\s*dtype=torch\.", text[len("tensor(") :])[0].removesuffix(")")
    body = body.replace("True", "true").replace("False", "false")
    return f"tensor({body}, shape={list(t.shape)}, dtype={dtype})"


def test_book_example_of_a_float_matrix():
    expected = (
        "tensor([[0.0000, 1.0000, 2.0000],\n"
        "        [3.0000, 4.0000, 5.0000]], shape=[2, 3], dtype=float32)"
    )
    assert repr(kael.arange(6.0).view(2, 3)) == expected


def test_0d_tensor_prints_its_value_and_an_empty_shape():
    assert repr(kael.tensor(3.5)) == "tensor(3.5000, shape=[], dtype=float32)"


def test_empty_tensor_prints_empty_brackets_and_its_shape():
    assert repr(kael.zeros(2, 0)) == "tensor([], shape=[2, 0], dtype=float32)"
    assert repr(kael.zeros(0, dtype=kael.int64)) == "tensor([], shape=[0], dtype=int64)"


def test_bools_print_as_true_and_false():
    assert repr(kael.full((3,), 2.5, dtype=kael.bool)) == (
        "tensor([true, true, true], shape=[3], dtype=bool)"
    )


def test_float64_prints_four_decimals_and_its_dtype():
    assert repr(kael.tensor([1 / 3, -2.0], dtype=kael.float64)) == (
        "tensor([ 0.3333, -2.0000], shape=[2], dtype=float64)"
    )


def test_non_finite_floats_print_as_nan_inf_and_minus_inf():
    values = [1.5, math.nan, -math.inf, math.inf]
    assert repr(kael.tensor(values)) == expected_text(torch.tensor(values), "float32")
    assert repr(kael.tensor(values)) == (
        "tensor([1.5000,    nan,   -inf,    inf], shape=[4], dtype=float32)"
    )


INT_SHAPES = [(6,), (2, 3), (2, 3, 4), (2, 2, 2, 2), (30,), (1000,), (1001,), (40, 40), (3, 400)]


@pytest.mark.parametrize("shape", INT_SHAPES, ids=str)
def test_int_layout_matches_torch(shape):
    n = math.prod(shape)
    k = kael.arange(-(n // 2), n - n // 2).view(shape)
    t = torch.arange(-(n // 2), n - n // 2).view(shape)
    assert repr(k) == expected_text(t, "int64")


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 2), (25,), (1500,), (10, 10, 11)], ids=str)
def test_float_layout_matches_torch(shape):
    n = math.prod(shape)
    values = [(i - n / 2) * 0.37 + 0.125 for i in range(n)]
    k = kael.tensor(values).view(shape)
    t = torch.tensor(values).view(shape)
    assert repr(k) == expected_text(t, "float32")


def test_summarising_starts_above_1000_elements():
    assert "..." not in repr(kael.zeros(1000))
    assert "..." in repr(kael.zeros(1001))


def test_bool_layout_matches_torch():
    values = [[True, False, True], [False, False, True]]
    assert repr(kael.tensor(values)) == expected_text(torch.tensor(values), "bool")


def test_strided_tensor_prints_in_logical_order():
    k, t = kael.arange(12).view(3, 4), torch.arange(12).view(3, 4)
    assert repr(k.T[:, 1:]) == expected_text(t.T[:, 1:], "int64")


def test_cpu_tensors_print_no_device_and_str_equals_repr():
    k = kael.ones(2)
    assert "device=" not in repr(k)
    assert str(k) == repr(k)


@pytest.fixture
def kael_options_restored():
    """kael's print options back to the default after the test (torch's: the autouse one)."""
    yield
    kael.set_printoptions(profile="default")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_summary_reads_only_the_shown_elements(dtype, monkeypatch):
    read = []
    host_array = kael.Tensor._host_array
    monkeypatch.setattr(
        kael.Tensor, "_host_array", lambda self: read.append(self.numel()) or host_array(self)
    )
    values = [[-0.25], [0.125], [0.5]]  # exact in both dtypes
    k = kael.tensor(values, dtype=getattr(kael, dtype)).expand(3, 2**20)
    t = torch.tensor(values, dtype=getattr(torch, dtype)).expand(3, 2**20)
    assert repr(k) == expected_text(t, dtype)
    assert read == [3 * 6]  # the 3 rows' 6 shown elements, converted to float32 alone


@pytest.mark.usefixtures("kael_options_restored")
@pytest.mark.parametrize("shape", [(30,), (5, 6), (2, 2, 1, 3), (1, 12)], ids=str)
def test_edgeitems_zero_summary_is_a_bare_ellipsis_as_torch(shape):
    torch.set_printoptions(threshold=10, edgeitems=0)
    kael.set_printoptions(threshold=10, edgeitems=0)
    n = math.prod(shape)
    text = expected_text(torch.arange(n).view(shape), "int64")
    assert repr(kael.arange(n).view(shape)) == text.replace(f", size={shape}", "")
    assert "[...]" in text
