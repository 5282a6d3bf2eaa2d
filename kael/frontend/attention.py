"""scaled_dot_product_attention as torch.nn.functional has it: softmax(q k^T * scale +
mask) v. On the CPU in float32 and float64 it is one fused kernel (codegen/cpu/
attention.py: online softmax over key blocks, the [L, S] scores never stored; under
@kael.compile an extern step); otherwise (the GPU, half types, dropout, value rows
wider than the kernel's block) it is composed from kael's matmul, softmax and
elementwise ops."""

from __future__ import annotations

import math

from kael.frontend import elementwise as ew
from kael.frontend import factories, linalg, nn, random, reductions, views
from kael.frontend.outputs import device_of, tensor_arg
from kael.frontend.tensor import Tensor, empty_impl
from kael.frontend.tracing import op_door
from kael.runtime.device import CPU
from kael.runtime.dtypes import bool_, float32, float64
from kael.runtime.errors import TypeError, ValueError


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """Attention of query [..., L, E] over key [..., S, E] and value [..., S, Ev]: a bool
    mask keeps where True, a float mask adds; is_causal keeps the lower triangle; scale
    defaults to 1/sqrt(E); enable_gqa repeats key and value heads (dim -3) to the query's.
    A row the mask leaves nothing of gives zeros, as PyTorch's CPU kernel does."""
    name = "scaled_dot_product_attention"
    q, k, v = (
        tensor_arg(t, name, what) for t, what in ((query, "query"), (key, "key"), (value, "value"))
    )
    device_of([q, k, v], name)
    for t in (q, k, v):
        if not t.dtype.is_floating_point:
            raise TypeError(f"{name}: expected floating point query, key and value, got {t.dtype}")
        if t.ndim < 2:
            raise ValueError(f"{name}: expected at least 2-D query, key and value, got {t.ndim}-D")
    if not (q.dtype is k.dtype is v.dtype):
        raise TypeError(
            f"Expected query, key, and value to have the same dtype, but got query.dtype:"
            f" {q.dtype} key.dtype: {k.dtype} and value.dtype: {v.dtype} instead."
        )
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"{name}: query {list(q.shape)}, key {list(k.shape)} and value {list(v.shape)}"
            " disagree: query and key need one embedding size, key and value one length"
        )
    if is_causal and attn_mask is not None:
        raise ValueError(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"
        )
    if attn_mask is not None:
        mask_dtype = tensor_arg(attn_mask, name, "attn_mask").dtype
        if not (mask_dtype is bool_ or mask_dtype.is_floating_point):
            raise TypeError(
                "Expected attn_mask dtype to be bool or float or to match query dtype, but got"
                f" attn_mask.dtype: {mask_dtype} and query.dtype: {q.dtype} instead."
            )
    if enable_gqa and q.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        heads, kv_heads = q.shape[-3], k.shape[-3]
        if heads % kv_heads:
            raise ValueError(
                f"{name}: {heads} query heads are not a multiple of {kv_heads} key heads"
            )
        k, v = (_repeat_heads(t, heads // kv_heads) for t in (k, v))
    length, source = q.shape[-2], k.shape[-2]
    # Empty embeddings give zero scores, weighted alike, as in PyTorch (not 0 * inf).
    factor = 1.0 / math.sqrt(q.shape[-1] or 1) if scale is None else float(scale)
    if dropout_p == 0.0:
        fused = _fused(q, k, v, attn_mask, is_causal, factor)
        if fused is not None:
            return fused
    scores = linalg.matmul(q, k.transpose(-2, -1)) * factor
    if is_causal:
        rows = factories.arange(length, device=q.device).reshape(length, 1)
        cols = factories.arange(source, device=q.device).reshape(1, source)
        attn_mask = ew.binary("ge", rows, cols)
    if attn_mask is not None:
        mask = tensor_arg(attn_mask, name, "attn_mask")
        keep_or_add = mask.dtype is bool_
        scores = ew.where(mask, scores, -math.inf) if keep_or_add else scores + mask
    weights = nn.softmax(scores, -1)
    # a row masked out entirely attends to nothing (with no keys, every row: zeros already)
    if attn_mask is not None and not is_causal and source:
        empty = ew.binary("eq", reductions.amax(scores, -1, keepdim=True), -math.inf)
        weights = ew.where(empty, 0.0, weights)
    if dropout_p > 0.0:
        weights = random.dropout(weights, dropout_p)
    return linalg.matmul(weights, v)


def _fused(q: Tensor, k: Tensor, v: Tensor, mask, is_causal: bool, scale: float):
    """The attention by codegen/cpu/attention.py's fused kernel, or None where it does not
    apply (a GPU, half types, batch dims that differ, value rows wider than EV_MAX, a mask
    whose batch dims do not merge into one stride)."""
    from kael.codegen.cpu import attention as kernel

    batch = q.shape[:-2]
    if (
        q.device is not CPU
        or q.dtype not in (float32, float64)
        or k.shape[:-2] != batch
        or v.shape[:-2] != batch
        or v.shape[-1] > kernel.EV_MAX
    ):
        return None
    length, source, width = q.shape[-2], k.shape[-2], v.shape[-1]
    count = math.prod(batch)
    kind, strides = ("causal" if is_causal else "none"), (0, 0, 0)
    if mask is not None:
        mask = tensor_arg(mask, "scaled_dot_product_attention", "attn_mask")
        if mask.dtype is not bool_ and mask.dtype is not q.dtype:
            return None
        try:
            full = mask.expand((*batch, length, source))
        except ValueError:
            return None
        merged = views.compute_stride(full.shape[:-2], full.strides()[:-2], (count,))
        if merged is None:  # batch dims that no one stride steps through
            return None
        kind = "keep" if mask.dtype is bool_ else "additive"
        strides = (*merged, *full.strides()[-2:])
        mask = full._impl
    rows = [_rows(t, count, n) for t, n in ((q, length), (v, source))]
    kt = _transposed_keys(k.reshape((count, source, k.shape[-1])))
    out = empty_impl((count, length, width), q.dtype, q.device)
    if out.numel():
        kernel.run(rows[0], kt, rows[1], out, mask, kind, scale, count, strides)
    return Tensor(out).reshape((*batch, length, width))


LINE = 64  # bytes of a cache line


def _transposed_keys(k: Tensor):
    """k [count, S, E] as k^T [count, E, S] with rows an odd number of cache lines apart.
    The kernel reads a block of keys down its E rows: rows 4 KiB apart (S = 1024 in
    float32) all fall in one L1 set and evict each other at every step (causal
    [8, 8, 1024, 64]: 125 ms, 80 ms padded)."""
    count, source, e = k.shape
    lines = -(-source * k.dtype.itemsize // LINE)
    row = (lines | 1) * LINE // k.dtype.itemsize
    kt = factories.empty((count, e, row), dtype=k.dtype, device=k.device)[..., :source]
    return kt.copy_(k.transpose(1, 2))._impl


def _rows(t: Tensor, count: int, n: int):
    """t as [count, n, last] with unit-stride rows (a copy only where needed)."""
    t = t.reshape((count, n, t.shape[-1]))
    return (t if t.strides()[-1] == 1 else t.contiguous())._impl


def _repeat_heads(t: Tensor, times: int) -> Tensor:
    """Each head of t (dim -3) repeated `times` times in place: [.., H, S, E] -> [.., H*times, S, E]."""
    shape = t.shape
    expanded = t.unsqueeze(-3).expand((*shape[:-2], times, *shape[-2:]))
    return expanded.reshape((*shape[:-3], shape[-3] * times, *shape[-2:]))


FUNCTIONS = {
    "scaled_dot_product_attention": op_door(
        "scaled_dot_product_attention", scaled_dot_product_attention
    )
}
