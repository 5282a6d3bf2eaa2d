"""kael.histogramdd against torch.histogramdd: bins as an int, ints or edge tensors, ranges,
weights, density, points on edges and outside, layouts, empty input and every refusal."""

import pytest
import torch
from parity_helpers import LAYOUTS, same
from parity_helpers import layout_pair as make

import kael

POINTS = [[0.0, 0.0], [1.0, 1.0], [0.5, 2.0], [2.0, 2.0], [3.0, -1.0], [1.5, 0.5]]
DTYPES = [kael.float32, kael.float64]
TORCH = {kael.float32: torch.float32, kael.float64: torch.float64}


def pair(values, dtype=kael.float32):
    return kael.tensor(values, dtype=dtype), torch.tensor(values, dtype=TORCH[dtype])


def same_histogram(k, t) -> None:
    """hist and every edges tensor as torch's, and the edges as a tuple."""
    assert isinstance(k.bin_edges, tuple)
    same(k.hist, t.hist)
    same(k.bin_edges, t.bin_edges)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("bins", [1, 2, 5, [2, 3], (4, 1)], ids=str)
def test_int_bins_span_the_data_range(bins, dtype):
    k, t = pair(POINTS, dtype)
    same_histogram(kael.histogramdd(k, bins), torch.histogramdd(t, bins))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_range_drops_points_outside_and_keeps_the_right_edge(dtype):
    k, t = pair(POINTS, dtype)
    box = [0.0, 2.0, 0.0, 2.0]  # (2, 2) sits on both right edges, (3, -1) is outside
    same_histogram(kael.histogramdd(k, [2, 3], range=box), torch.histogramdd(t, [2, 3], range=box))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_edge_tensors_bin_on_their_own_edges(dtype):
    k, t = pair(POINTS, dtype)
    ke = [kael.tensor(e, dtype=dtype) for e in ([0.0, 1.0, 1.5, 2.0], [-1.0, 0.0, 2.0])]
    te = [torch.tensor(e, dtype=TORCH[dtype]) for e in ([0.0, 1.0, 1.5, 2.0], [-1.0, 0.0, 2.0])]
    same_histogram(kael.histogramdd(k, ke), torch.histogramdd(t, te))


@pytest.mark.parametrize("density", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_weights_sum_into_their_bins_and_density_normalises(dtype, density):
    k, t = pair(POINTS, dtype)
    kw, tw = pair([0.5, 1.0, 2.0, 3.0, 4.0, 0.25], dtype)
    same_histogram(
        kael.histogramdd(k, [2, 3], weight=kw, density=density),
        torch.histogramdd(t, [2, 3], weight=tw, density=density),
    )


def test_density_without_weights_divides_by_count_and_bin_volume():
    k, t = pair(POINTS)
    same_histogram(
        kael.histogramdd(k, [3, 2], density=True), torch.histogramdd(t, [3, 2], density=True)
    )


def test_density_of_no_counted_point_is_nan():
    k, t = pair(POINTS)
    box = [5.0, 6.0, 5.0, 6.0]
    same_histogram(
        kael.histogramdd(k, 2, range=box, density=True),
        torch.histogramdd(t, 2, range=box, density=True),
    )


def test_nan_point_is_not_counted():
    k, t = pair([[float("nan"), 0.5], [0.5, 0.5]])
    box = [0.0, 1.0, 0.0, 1.0]
    same_histogram(kael.histogramdd(k, 2, range=box), torch.histogramdd(t, 2, range=box))


def test_constant_data_range_widens_by_half_on_each_side():
    k, t = pair([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    same_histogram(kael.histogramdd(k, 2), torch.histogramdd(t, 2))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layouts_give_torchs_histogram(layout):
    k, t = make((7, 3), layout=layout)
    same_histogram(kael.histogramdd(k, [2, 3, 4]), torch.histogramdd(t, [2, 3, 4]))


def test_leading_dims_are_flattened_into_points_with_their_weights():
    k, t = make((2, 4, 3))
    kw, tw = make((2, 4))
    same_histogram(kael.histogramdd(k, 3, weight=kw), torch.histogramdd(t, 3, weight=tw.float()))


def test_one_dimensional_points_match_torch():
    k, t = make((9, 1))
    same_histogram(kael.histogramdd(k, 4), torch.histogramdd(t, 4))


@pytest.mark.parametrize("box", [None, [0.0, 1.0, 0.0, 1.0]], ids=["no range", "range"])
def test_empty_input_gives_zero_counts(box):
    k, t = kael.zeros(0, 2), torch.zeros(0, 2)
    same_histogram(kael.histogramdd(k, 2, range=box), torch.histogramdd(t, 2, range=box))


def test_points_without_coordinates_give_a_0d_zero_and_no_edges():
    k = kael.histogramdd(kael.zeros(4, 0), bins=[])
    t = torch.histogramdd(torch.zeros(4, 0), bins=[])
    same_histogram(k, t)


def test_is_not_a_tensor_method():
    assert not hasattr(kael.Tensor, "histogramdd") and not hasattr(torch.Tensor, "histogramdd")


# ---- refusals ----------------------------------------------------------------------------------


def refuses(error, match, *args, **kwargs):
    with pytest.raises(error, match=match):
        kael.histogramdd(*args, **kwargs)


@pytest.mark.parametrize("dtype", [kael.int64, kael.float16, kael.bfloat16, kael.bool], ids=str)
def test_non_float32_64_input_is_refused(dtype):
    refuses(kael.TypeError, f"not implemented for {dtype}", kael.zeros(3, 2, dtype=dtype), 2)


@pytest.mark.parametrize("shape", [(), (4,)], ids=str)
def test_input_of_fewer_than_2_dims_is_refused(shape):
    refuses(kael.ValueError, "at least 2 dimensions", kael.zeros(shape), 2)


def test_bin_counts_must_number_the_dimensions():
    refuses(kael.ValueError, "3 bin counts for 2-dimensional", kael.zeros(3, 2), [2, 3, 4])


@pytest.mark.parametrize("bins", [0, -1, [2, 0]], ids=str)
def test_bin_count_below_one_is_refused(bins):
    refuses(kael.ValueError, "bins must be > 0, but got", kael.zeros(3, 2), bins)


@pytest.mark.parametrize("bins", [[2.5, 2], 2.0, "2", [2, kael.zeros(3)]], ids=str)
def test_bins_of_other_types_are_refused(bins):
    refuses(kael.TypeError, "bins must be", kael.zeros(3, 2), bins)


def test_bins_tensor_alone_is_refused_as_torch():
    with pytest.raises(TypeError):
        torch.histogramdd(torch.zeros(3, 2), bins=torch.tensor([2, 2]))
    refuses(kael.TypeError, "got Tensor", kael.zeros(3, 2), kael.tensor([2, 2]))


def test_range_needs_two_numbers_per_dimension():
    refuses(kael.ValueError, "should have 4 elements, but got 2", kael.zeros(3, 2), 2, range=[0, 1])


def test_range_with_min_above_max_is_refused():
    refuses(kael.ValueError, "min 1 max 0 for dimension 0", kael.zeros(3, 2), 2, range=[1, 0, 0, 1])


@pytest.mark.parametrize("bad", [float("inf"), float("nan")], ids=str)
def test_range_must_be_finite(bad):
    refuses(kael.ValueError, "dimension 1's range", kael.zeros(3, 2), 2, range=[0, 1, 0, bad])


def test_min_equal_to_max_is_allowed():
    k, t = pair(POINTS)
    box = [1.0, 1.0, 0.0, 2.0]
    same_histogram(kael.histogramdd(k, 2, range=box), torch.histogramdd(t, 2, range=box))


def test_edge_tensors_must_number_the_dimensions():
    refuses(kael.ValueError, "expected 2 sequences of bin edges", kael.zeros(3, 2), [kael.zeros(3)])


def test_edge_tensor_must_be_1d():
    edges = [kael.zeros(3), kael.zeros(1, 2)]
    refuses(kael.ValueError, "got 2 dimensions .* for dimension 1", kael.zeros(3, 2), edges)


@pytest.mark.parametrize("n", [0, 1], ids=["no edge", "one edge"])
def test_edge_tensor_needs_two_edges(n):
    refuses(kael.ValueError, "dimension 1", kael.zeros(3, 2), [kael.zeros(3), kael.zeros(n)])


def test_two_edges_are_enough():
    k, t = pair(POINTS)
    ke, te = [kael.tensor([0.0, 2.0])] * 2, [torch.tensor([0.0, 2.0])] * 2
    same_histogram(kael.histogramdd(k, ke), torch.histogramdd(t, te))


def test_edge_tensor_of_another_dtype_is_refused():
    edges = [kael.zeros(3), kael.zeros(3)]
    x = kael.zeros(3, 2, dtype=kael.float64)
    refuses(kael.TypeError, "float64 and bins for dimension 0 with dtype float32", x, edges)


def test_weight_shape_must_be_the_points_shape():
    refuses(kael.ValueError, r"\[5, 2\] and weight with shape \[5, 1\]", kael.zeros(5, 2), 2,
            weight=kael.ones(5, 1))  # fmt: skip


def test_weight_dtype_must_be_the_inputs():
    w = kael.ones(5, dtype=kael.float64)
    refuses(
        kael.TypeError, r"input\(float32\), and weight\(float64\)", kael.zeros(5, 2), 2, weight=w
    )


def test_input_must_be_a_tensor():
    refuses(kael.TypeError, "input must be a Tensor", [[0.0, 1.0]], 2)
