"""kael/ir/views.py: composing a read of a produced value with the producer's input layouts,
checked element by element on both sides of its carry limit."""

from __future__ import annotations

import numpy as np

from kael.ir.views import compose


def _read(shape, strides, offset, produced, inner):
    """What compose says a read of the produced value reads of an input laid out as `inner`,
    checked element by element against NumPy index arithmetic."""
    composed = compose(shape, strides, offset, produced, [inner], False)
    if composed is None:
        return None
    source_strides, source_offset = inner
    for point in np.ndindex(*shape):
        flat = offset + sum(i * s for i, s in zip(point, strides))
        produced_index = np.unravel_index(flat, produced)
        want = source_offset + sum(i * s for i, s in zip(produced_index, source_strides))
        got = composed.offsets[0] + sum(i * s for i, s in zip(point, composed.strides[0]))
        assert got == want, (point, got, want)
    return composed


def test_compose_identity():
    assert _read((4, 6), (6, 1), 0, (4, 6), ((6, 1), 0)) is not None


def test_compose_transpose_of_a_transposed_input():
    assert _read((6, 4), (1, 6), 0, (4, 6), ((1, 4), 0)) is not None


def test_compose_reshape_merging_dims_the_input_steps_evenly():
    assert _read((24,), (1,), 0, (4, 6), ((6, 1), 3)) is not None


def test_compose_reshape_merging_dims_the_input_does_not_step_evenly_is_refused():
    # the input is the transpose of a [6, 4]: along the merged dim it jumps at each row end
    assert _read((24,), (1,), 0, (4, 6), ((1, 4), 0)) is None


def test_compose_slice_inside_one_row_and_just_past_it():
    assert _read((2, 3), (6, 1), 3, (4, 6), ((1, 4), 0)) is not None  # cols 3..5: fits
    assert _read((2, 4), (6, 1), 3, (4, 6), ((1, 4), 0)) is None  # cols 3..6: carries


def test_compose_broadcast_read():
    assert _read((5, 4, 6), (0, 6, 1), 0, (4, 6), ((0, 1), 0)) is not None


def test_compose_positions_of_a_permuted_read():
    composed = compose((6, 4), (1, 6), 0, (4, 6), [], True)
    assert composed.axes == ((0, {1: 1}), (0, {0: 1}))


def test_dense_order_of_a_fresh_output_in_each_memory_order():
    """A fresh op output is its whole buffer, row-major over its dims in memory order."""
    from kael.ir.views import View, covers_buffer, dense_order
    from kael.runtime.dtypes import float32

    def order(shape, strides, offset=0, nbytes=None):
        nbytes = 4 * int(np.prod(shape)) if nbytes is None else nbytes
        return dense_order(View(0, shape, strides, offset, float32), nbytes)

    assert order((3, 4), (4, 1)) == (0, 1)
    assert order((3, 4), (1, 3)) == (1, 0)  # column-major
    assert order((2, 3, 4, 5), (60, 1, 15, 3)) == (0, 2, 3, 1)  # channels-last
    assert order((2, 1, 3), (3, 99, 1)) is not None  # a size-1 dim's stride never steps
    assert order((3, 4), (4, 1), offset=1) is None  # part of a bigger buffer
    assert order((3, 4), (4, 1), nbytes=52) is None
    assert order((3, 4), (8, 2), nbytes=96) is None  # every other element
    assert order((3, 4), (1, 4)) is None  # overlapping columns
    assert covers_buffer(View(0, (3, 4), (1, 3), 0, float32), 48)
