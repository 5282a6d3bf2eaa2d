"""index_select's row-copy kernel (codegen/cpu/take_rows.py): runs of a cache line and
more, with and without a masked tail, blocks before the indexed dim, every dtype, and
the first bad index named, against PyTorch."""

import re

import numpy as np
import pytest
import torch
from llvmlite import ir
from parity_helpers import close_to_torch
from parity_helpers import torch_pair as pair

import kael
from kael.codegen.cpu import compiler, handwritten, take_rows
from kael.frontend import eager
from kael.frontend.inspection import record_launches

RNG = np.random.default_rng(21)


@pytest.mark.parametrize(
    "shape, dim, dtype",
    [
        ((50, 16), 0, kael.float32),  # one 64-byte vector a run
        ((50, 37), 0, kael.float32),  # two vectors and a masked tail
        ((3, 20, 5, 7), 1, kael.float64),  # blocks before the dim: 280-byte runs
        ((40, 100), 0, kael.uint8),  # 100-byte runs of bytes
        ((40, 33), 0, kael.bfloat16),
        ((40, 9, 8), 0, kael.bool),
    ],
    ids=str,
)
def test_runs_match_torch(shape, dim, dtype):
    values = RNG.standard_normal(shape) if dtype.is_floating_point else RNG.integers(0, 2, shape)
    kx, tx = pair(values, dtype)
    index = RNG.integers(0, shape[dim], 23)
    k, launched = record_launches(kael.index_select, kx, dim, kael.tensor(index))
    close_to_torch(k, torch.index_select(tx, dim, torch.tensor(index)), 0)
    assert take_rows.SYMBOL in {x.symbol for x in launched}


def test_short_runs_and_strided_sources_take_the_walk():
    kx, tx = pair(RNG.standard_normal((50, 15)))  # 60-byte runs: under a cache line
    index = kael.tensor([3, 1, 49])
    k, launched = record_launches(kael.index_select, kx, 0, index)
    assert take_rows.SYMBOL not in {x.symbol for x in launched}
    close_to_torch(k, torch.index_select(tx, 0, torch.tensor([3, 1, 49])), 0)
    kx, tx = pair(RNG.standard_normal((32, 50)))
    k, launched = record_launches(kael.index_select, kx.transpose(0, 1), 0, index)
    assert take_rows.SYMBOL not in {x.symbol for x in launched}
    close_to_torch(k, torch.index_select(tx.transpose(0, 1), 0, torch.tensor([3, 1, 49])), 0)


@pytest.mark.parametrize("bad", [50, -1])
def test_first_bad_index_is_named(bad):
    kx = kael.zeros(50, 32)
    with pytest.raises(kael.IndexError, match=f"index {bad} is out of bounds for dimension 0"):
        kael.index_select(kx, 0, kael.tensor([0, 7, bad, 49, 60]))


def test_embedding_takes_the_kernel():
    weight = kael.randn(1000, 64)
    index = kael.tensor(RNG.integers(0, 1000, (4, 25)))
    out, launched = record_launches(kael.nn.functional.embedding, index, weight)
    assert take_rows.SYMBOL in {x.symbol for x in launched}
    assert kael.equal(out[2, 3], weight[int(index[2, 3])])


@pytest.mark.parametrize(
    "columns, streamed", [(16, True), (32, True), (24, False), (37, False)], ids=str
)
def test_large_outputs_of_whole_lines_stream(monkeypatch, columns, streamed):
    """Outputs over the streaming threshold whose runs are whole 64-byte lines store past
    the caches; runs with a tail keep the cached kernel; both copy the same values."""
    monkeypatch.setattr(eager, "NONTEMPORAL_BYTES", 4096)
    kx, tx = pair(RNG.standard_normal((300, columns)))
    index = RNG.integers(0, 300, 500)
    k, launched = record_launches(kael.index_select, kx, 0, kael.tensor(index))
    close_to_torch(k, torch.index_select(tx, 0, torch.tensor(index)), 0)
    symbols = {x.symbol for x in launched}
    assert (take_rows.STREAM_SYMBOL in symbols) == streamed
    assert (take_rows.SYMBOL in symbols) != streamed


def test_small_outputs_store_through_the_caches():
    kx = kael.randn(300, 16)
    _, launched = record_launches(kael.index_select, kx, 0, kael.tensor([1, 2, 3]))
    assert take_rows.SYMBOL in {x.symbol for x in launched}


def test_only_the_streaming_kernel_stores_nontemporally():
    module = ir.Module("probe")
    take_rows._emit(module)
    asm = compiler.assembly_of_ir_text(handwritten.ir_text(module))
    bodies = dict(re.findall(r"\n(kael_take_rows\w*):(.*?)\.Lfunc_end", asm, re.S))
    assert re.search(r"vmovnt", bodies[take_rows.STREAM_SYMBOL])
    assert not re.search(r"vmovnt", bodies[take_rows.SYMBOL])
