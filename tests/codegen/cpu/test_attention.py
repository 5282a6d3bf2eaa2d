"""The fused attention kernel (codegen/cpu/attention.py): its blocking edges (query rows
past a block, keys past a block, value rows wider than a micro-tile), every mask kind,
rows the mask empties, and where the composed path takes over, against PyTorch."""

import numpy as np
import pytest
import torch.nn.functional as TF
from parity_helpers import close_to_torch
from parity_helpers import torch_pair as pair

import kael
import kael.nn.functional as KF
from kael.codegen.cpu import attention
from kael.frontend.inspection import record_launches

RNG = np.random.default_rng(9)


def _attend(q_shape, k_shape, v_width, dtype=kael.float32, mask=None, **kwargs):
    """(kael's, torch's) attention and the kernel symbols kael launched."""
    kq, tq = pair(RNG.standard_normal(q_shape), dtype)
    kk, tk = pair(RNG.standard_normal(k_shape), dtype)
    kv, tv = pair(RNG.standard_normal((*k_shape[:-1], v_width)), dtype)
    km = tm = None
    if mask is not None:
        km, tm = pair(mask, kael.bool if mask.dtype == bool else dtype)
    k, launched = record_launches(KF.scaled_dot_product_attention, kq, kk, kv, km, **kwargs)
    t = TF.scaled_dot_product_attention(tq, tk, tv, tm, **kwargs)
    return k, t, [x.symbol for x in launched]


@pytest.mark.parametrize(
    "q_shape, k_shape, v_width",
    [
        ((2, 2, 70, 16), (2, 2, 70, 16), 16),  # a second, partial query block
        ((1, 3, 10, 8), (1, 3, 150, 8), 5),  # keys past two blocks; narrow value rows
        ((1, 1, 65, 4), (1, 1, 64, 4), 100),  # value rows over two micro-tiles
        ((3, 129, 1), (3, 1, 1), attention.EV_MAX),  # one key; the widest value rows
    ],
    ids=str,
)
@pytest.mark.parametrize("causal", [False, True])
def test_blocks_match_torch(q_shape, k_shape, v_width, causal):
    k, t, launched = _attend(q_shape, k_shape, v_width, is_causal=causal)
    close_to_torch(k, t, 1e-5)
    assert launched[-1] == attention.symbol("causal" if causal else "none")  # after k^T's copy


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_masks_match_torch(dtype):
    tol = 1e-5 if dtype is kael.float32 else 1e-12
    additive = RNG.standard_normal((1, 2, 1, 90, 80))[:, :, 0]  # a stepped batch stride
    for mask in (additive, additive > 0.5, additive[0, 0] > 0.0):
        k, t, launched = _attend((1, 2, 90, 8), (1, 2, 80, 8), 8, dtype, mask)
        close_to_torch(k, t, tol)
        kind = "keep" if mask.dtype == bool else "additive"
        assert attention.symbol(kind) in launched


def test_rows_the_mask_empties_give_zeros():
    mask = np.ones((70, 90), dtype=bool)
    mask[3] = mask[68] = False
    k, t, _ = _attend((1, 70, 8), (1, 90, 8), 6, mask=mask)
    assert not k[0, 3].numpy().any() and not k[0, 68].numpy().any()
    close_to_torch(k, t, 1e-5)


def test_nan_in_a_score_reaches_its_row_only():
    kq, tq = pair(RNG.standard_normal((1, 80, 8)))
    kk, tk = pair(RNG.standard_normal((1, 80, 8)))
    kv, tv = pair(RNG.standard_normal((1, 80, 8)))
    kq[0, 5, 0] = float("nan")
    tq[0, 5, 0] = float("nan")
    close_to_torch(
        KF.scaled_dot_product_attention(kq, kk, kv),
        TF.scaled_dot_product_attention(tq, tk, tv),
        1e-5,
        equal_nan=True,
    )


def test_strided_operands_and_empty_sizes():
    kq, tq = pair(RNG.standard_normal((2, 8, 70)))
    kk, tk = pair(RNG.standard_normal((2, 8, 40)))
    kv, tv = pair(RNG.standard_normal((2, 40, 6)))
    args = (kq.transpose(1, 2), kk.transpose(1, 2), kv)
    targs = (tq.transpose(1, 2), tk.transpose(1, 2), tv)
    close_to_torch(
        KF.scaled_dot_product_attention(*args), TF.scaled_dot_product_attention(*targs), 1e-5
    )
    for q_shape, k_shape in (((2, 0, 8), (2, 5, 8)), ((0, 3, 8), (0, 5, 8))):
        k, t, _ = _attend(q_shape, k_shape, 4)
        close_to_torch(k, t, 0)
    for causal in (False, True):  # empty embeddings: zero scores, each kept key alike
        k, t, _ = _attend((2, 3, 0), (2, 4, 0), 5, is_causal=causal)
        close_to_torch(k, t, 1e-6)


def test_composed_path_takes_what_the_kernel_does_not():
    k, t, launched = _attend((1, 10, 8), (1, 12, 8), attention.EV_MAX + 1)
    close_to_torch(k, t, 1e-5)
    assert not any(s.startswith("kael_attention") for s in launched)
    mask = RNG.standard_normal((2, 1, 4, 10, 12))  # batch dims that do not merge
    k, t, launched = _attend((2, 3, 4, 10, 8), (2, 3, 4, 12, 8), 4, mask=mask)
    close_to_torch(k, t, 1e-5)
    assert not any(s.startswith("kael_attention") for s in launched)
    mask = RNG.standard_normal((2, 1, 10, 12))  # a (batch, head) mask the kernel reads
    k, t, launched = _attend((2, 3, 10, 8), (2, 3, 12, 8), 4, mask=mask)
    close_to_torch(k, t, 1e-5)
    assert any(s.startswith("kael_attention") for s in launched)
    k, t, launched = _attend((1, 10, 8), (1, 12, 8), 4, kael.float16)
    close_to_torch(k, t, 2e-3)


def test_result_bits_do_not_depend_on_the_thread_count():
    kq, kk, kv = (pair(RNG.standard_normal((4, 130, 16)))[0] for _ in range(3))
    before = kael.get_num_threads()
    try:
        kael.set_num_threads(1)
        one = KF.scaled_dot_product_attention(kq, kk, kv, is_causal=True)
        kael.set_num_threads(2)
        two = KF.scaled_dot_product_attention(kq, kk, kv, is_causal=True)
    finally:
        kael.set_num_threads(before)
    assert kael.equal(one, two)


@pytest.mark.parametrize(
    "source, dtype",
    [(1024, kael.float32), (512, kael.float64), (1000, kael.float32), (3, kael.float64)],
)
def test_transposed_keys_rows_are_an_odd_number_of_cache_lines_apart(source, dtype):
    """Rows 4 KiB apart (1024 float32 keys) would share one L1 set: the padding to an odd
    number of lines spreads a block's E rows over every set; the values are k^T."""
    from kael.frontend.attention import LINE, _transposed_keys

    k = kael.tensor(RNG.standard_normal((2, 3, source, 5)), dtype=dtype)
    kt = _transposed_keys(k._impl)
    row_bytes = kt.strides[2] * dtype.itemsize
    assert row_bytes % LINE == 0 and (row_bytes // LINE) % 2 == 1
    assert source * dtype.itemsize <= row_bytes < source * dtype.itemsize + 2 * LINE
    np.testing.assert_array_equal(kael.Tensor(kt).numpy(), k.numpy().transpose(0, 1, 3, 2))


@pytest.mark.parametrize("causal", [False, True])
def test_heads_in_the_middle_are_read_and_written_in_place(causal):
    """HF's q.view(B, L, H, E).transpose(1, 2): the kernel steps through (batch, head)
    matrices by two strides, so the only copy is k^T's and the result keeps q's layout."""
    x = RNG.standard_normal((3, 70, 4, 16))
    (kx, tx) = pair(x)
    kq, tq = kx.transpose(1, 2), tx.transpose(1, 2)
    got, launched = record_launches(KF.scaled_dot_product_attention, kq, kq, kq, is_causal=causal)
    want = TF.scaled_dot_product_attention(tq, tq, tq, is_causal=causal)
    close_to_torch(got, want, 1e-5)
    assert got.stride() == want.stride()
    symbols = [x.symbol for x in launched]
    assert [s for s in symbols if not s.startswith("kael_attention")] == symbols[:1]  # k^T
