from kael.ir import layout
from kael.ir.kernel import BCAST, CONTIG, PAIRS, STRIDED


def test_contiguous_tensor_of_any_rank_is_one_flat_loop():
    lay = layout.plan((2, 3, 4, 5), [(60, 20, 5, 1), (60, 20, 5, 1)])
    assert lay.sizes == (120,)
    assert lay.strides == ((1,), (1,))
    assert lay.inners == (CONTIG, CONTIG)
    assert not lay.tiled


def test_size_one_dims_are_dropped_whatever_their_stride():
    lay = layout.plan((3, 1, 4), [(4, 4, 1), (4, 99, 1)])
    assert lay.sizes == (12,)


def test_zero_dim_and_all_ones_become_one_element():
    assert layout.plan((), [(), ()]).sizes == (1,)
    lay = layout.plan((1, 1), [(1, 1), (7, 7)])
    assert lay.sizes == (1,) and lay.inners == (CONTIG, CONTIG)


def test_broadcast_input_is_classified_bcast_and_merged():
    lay = layout.plan((4, 5, 6), [(30, 6, 1), (0, 0, 0)])
    assert lay.sizes == (120,)
    assert lay.inners == (CONTIG, BCAST)


def test_row_broadcast_keeps_two_dims():
    lay = layout.plan((4, 6), [(6, 1), (0, 1)])
    assert lay.sizes == (4, 6)
    assert lay.strides == ((6, 1), (0, 1))


def test_stepped_slice_is_strided():
    lay = layout.plan((8,), [(1,), (3,)])
    assert lay.inners == (CONTIG, STRIDED)


def test_every_other_element_is_pairs_on_both_sides_of_stride_two():
    assert layout.plan((8,), [(1,), (2,)]).inners == (CONTIG, PAIRS)
    assert layout.plan((8,), [(1,), (3,)]).inners[1] == STRIDED
    assert layout.plan((8,), [(1,), (-2,)]).inners[1] == STRIDED


def test_transposed_input_is_tiled_with_its_unit_dim_second_last():
    lay = layout.plan((64, 32), [(32, 1), (1, 64)])
    assert lay.tiled
    assert lay.sizes == (64, 32)
    assert lay.strides[1] == (1, 64)


def test_permuted_3d_input_moves_its_unit_dim_next_to_the_inner_one():
    # out [a, b, c] contiguous; the input's unit stride is on dim 0.
    lay = layout.plan((20, 30, 40), [(1200, 40, 1), (1, 20, 600)])
    assert lay.tiled
    assert lay.sizes == (30, 20, 40)
    assert lay.strides[1] == (20, 1, 600)


def test_short_transposes_are_not_tiled():
    lay = layout.plan((8, 100), [(100, 1), (1, 8)])
    assert not lay.tiled and lay.inners[1] == STRIDED


def test_output_order_drives_the_loop_order():
    # A transposed output is walked in its own memory order, so its inner loop is unit-stride.
    lay = layout.plan((5, 7), [(1, 5), (1, 5)])
    assert lay.sizes == (35,)
    assert lay.inners == (CONTIG, CONTIG)


def test_keep_dims_pins_the_logical_order():
    lay = layout.plan((3, 1, 4), [(4, 4, 1)], keep_dims=True)
    assert lay.sizes == (3, 1, 4)
    assert not lay.tiled
