"""The row-copy kernel under cat and stack (kael/codegen/cpu/block_copy.py): each piece's rows
land at its offset in every output row, whatever the rows, pieces and thread split."""

import numpy as np
import pytest

import kael
from kael.codegen.cpu import block_copy


def _join(pieces: list[np.ndarray], rows: int) -> np.ndarray:
    """The pieces (each `rows` rows of bytes) joined row by row through the kernel."""
    widths = [p.nbytes // rows if rows else 0 for p in pieces]
    out = np.full(rows * sum(widths), 0xAB, np.uint8)
    offsets = np.cumsum([0, *widths[:-1]])
    placed = [(p.ctypes.data, w, int(o)) for p, w, o in zip(pieces, widths, offsets)]
    block_copy.copy_rows(out.ctypes.data, sum(widths), rows, placed)
    return out.reshape(rows, -1) if rows else out


@pytest.mark.parametrize("rows", [1, 3, 64])
@pytest.mark.parametrize("widths", [(1,), (7, 1, 300), (0, 16, 0), (4096, 8192)])
@pytest.mark.parametrize("threads", [1, 2])
def test_each_piece_lands_at_its_offset_in_every_row(rows, widths, threads):
    rng = np.random.default_rng(rows)
    pieces = [rng.integers(0, 256, (rows, w), dtype=np.uint8) for w in widths]
    saved = kael.get_num_threads()
    kael.set_num_threads(threads)
    try:
        np.testing.assert_array_equal(_join(pieces, rows), np.concatenate(pieces, 1))
    finally:
        kael.set_num_threads(saved)


def test_no_rows_or_no_pieces_write_nothing():
    assert _join([np.zeros(0, np.uint8)], 0).size == 0
    out = np.full(4, 7, np.uint8)
    block_copy.copy_rows(out.ctypes.data, 4, 1, [])
    np.testing.assert_array_equal(out, 7)


def test_the_kernel_is_one_memcpy_a_work_item():
    text = block_copy.ir_text()
    assert text.count('call void @"llvm.memcpy.p0.p0.i64"') == 1


@pytest.mark.parametrize("threads", [1, 2])
def test_a_copy_is_described_for_replay_exactly_while_it_runs_inline_on_any_thread_count(threads):
    """Below PARALLEL_BYTES moved the copy always runs on the calling thread (its code
    optimized from PROMOTE_BYTES on), so a door may replay it; from there on it may not."""
    from kael.runtime.launcher import PARALLEL_BYTES, PROMOTE_BYTES

    saved = kael.get_num_threads()
    kael.set_num_threads(threads)
    try:
        for moved, kept in (
            (PROMOTE_BYTES, True),
            (PARALLEL_BYTES - 2, True),
            (PARALLEL_BYTES, False),
        ):
            row = moved // 4  # two pieces, copied once each way
            pieces = [np.ones(row, np.uint8), np.full(row, 2, np.uint8)]
            out = np.zeros(2 * row, np.uint8)
            placed = [(pieces[0].ctypes.data, row, 0), (pieces[1].ctypes.data, row, row)]
            found = block_copy.copy_rows(out.ctypes.data, 2 * row, 1, placed)
            np.testing.assert_array_equal(out, np.concatenate(pieces))
            assert (found is not None) == kept, moved
    finally:
        kael.set_num_threads(saved)
