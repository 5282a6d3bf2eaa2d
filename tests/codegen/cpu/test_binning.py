"""bincount's histogram kernel (codegen/cpu/binning.py): one row of bins per chunk of
CHUNK values, each row the chunk's own counts or weight sums."""

import numpy as np
import pytest

import kael
from kael.codegen.cpu import binning
from kael.codegen.cpu.binning import CHUNK


@pytest.mark.parametrize("total", [1, CHUNK, CHUNK + 5])
@pytest.mark.parametrize("weighted", [False, True])
def test_each_chunk_bins_into_its_own_row(total, weighted):
    rng = np.random.default_rng(total)
    values = rng.integers(0, 6, total)
    weights = rng.random(total) if weighted else None
    dtype = kael.float64 if weighted else kael.int64
    rows = kael.zeros(binning.chunks(total), 6, dtype=dtype)
    x = kael.tensor(values)
    w = None if weights is None else kael.tensor(weights)
    binning.bin_into(
        rows._impl, x._impl, None if w is None else w._impl, dtype if weighted else None
    )
    for c, row in enumerate(rows.numpy()):
        part = slice(c * CHUNK, (c + 1) * CHUNK)
        want = np.bincount(values[part], None if weights is None else weights[part], minlength=6)
        np.testing.assert_allclose(row, want, rtol=1e-12)


def test_chunks_cover_every_value_and_no_more():
    assert [binning.chunks(n) for n in (0, 1, CHUNK, CHUNK + 1)] == [0, 1, 1, 2]


def test_values_changed_past_the_bins_after_the_check_are_left_out(monkeypatch):
    # bincount sizes its bins from one read (aminmax) and the kernel reads the values
    # again: another thread may change them between, and a value past the bins must not
    # be written outside them
    from kael.codegen.cpu import dense

    values = np.arange(10, dtype=np.int64)
    x = kael.from_numpy(values)  # the kernel reads this very memory
    run = dense.run

    def meddling(name, build, symbol, words, *args, **kw):
        if name.startswith("kael_bincount"):
            values[:] = 1 << 40
        return run(name, build, symbol, words, *args, **kw)

    monkeypatch.setattr(binning.dense, "run", meddling)
    counts = kael.bincount(x)
    assert counts.shape == (10,) and counts.tolist() == [0] * 10
