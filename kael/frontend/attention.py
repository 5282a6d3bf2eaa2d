"""scaled_dot_product_attention as torch.nn.functional has it: softmax(q k^T * scale +
mask) v. On the CPU in float32 and float64 it is one fused kernel (codegen/cpu/
attention.py: online softmax over key blocks, the [L, S] scores never stored; under
@kael.compile an extern step); otherwise (the GPU, dropout, value rows wider than the
kernel's block, a decoding step's query of one or two rows over a long cache of keys) it
is composed from kael's matmul, softmax and elementwise ops. Half types compute in
float32 and round once, as torch's CPU kernel (bfloat16 [1, 4, 64, 32] causal: largest
error against float64 0.027 -> 0.0068, as torch). multi_head_attention_forward
(nn.MultiheadAttention's forward) follows torch/nn/functional.py's steps on kael's
linear, matmul, softmax and this attention."""

from __future__ import annotations

import math

from kael.codegen.cpu import native_launch
from kael.frontend import elementwise as ew
from kael.frontend import (
    factories,
    fastpath,
    index_ops,
    linalg,
    memory_formats,
    nn,
    random,
    reductions,
    views,
)
from kael.frontend.layers import linear
from kael.frontend.outputs import device_of, tensor_arg
from kael.frontend.padding import pad
from kael.frontend.tensor import Tensor, clone_impl, empty_impl
from kael.frontend.tracing import op_door
from kael.runtime import user_warning
from kael.runtime.device import CPU
from kael.runtime.dtypes import bool_, float32, float64
from kael.runtime.errors import IndexError, TypeError, ValueError
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl, contiguous_strides


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
    door = _door_key(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if door is not None:
        kept = _DOOR.get(door)
        if kept is not None:
            return _replay(kept, query._impl, key._impl, value._impl)
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
    flash = _flash_takes(q, k, v, None, dropout_p, enable_gqa)  # as far as q, k, v tell
    if attn_mask is not None:
        mask_dtype = tensor_arg(attn_mask, name, "attn_mask").dtype
        if not (mask_dtype is bool_ or mask_dtype.is_floating_point):
            raise TypeError(
                "Expected attn_mask dtype to be bool or float or to match query dtype, but got"
                f" attn_mask.dtype: {mask_dtype} and query.dtype: {q.dtype} instead."
            )
        if flash and attn_mask.ndim < 2:  # torch's flash kernel reads its last two dims
            raise IndexError(
                f"{name}: attn_mask needs the query's and the key's dims (its last two), got"
                f" a {attn_mask.ndim}-d mask"
            )
        scores = (*q.shape[:-1], k.shape[-2])
        if ew.broadcast_shapes(attn_mask.shape, scores) != scores:  # added in place, as torch's
            raise ValueError(
                f"{name}: attn_mask of shape {list(attn_mask.shape)} does not broadcast to the"
                f" scores' shape {list(scores)}"
            )
        flash = flash and _flash_mask(attn_mask.shape, scores)
        if is_causal and not flash:  # torch's math path refuses the pair
            raise ValueError(
                f"{name}: Explicit attn_mask should not be set when is_causal=True (only"
                " torch's fused CPU kernel takes both: a 4-d query, key and value, no"
                " dropout, a 2-d or 4-d mask)"
            )
        if is_causal:  # both apply, as torch 2.13's CPU kernel: one mask of the two
            causal = _causal_mask(q.shape[-2], k.shape[-2], q.device)
            mask = tensor_arg(attn_mask, name, "attn_mask")
            both = ew.binary("logical_and", mask, causal) if mask_dtype is bool_ else None
            attn_mask = both if both is not None else ew.where(causal, mask, -math.inf)
            is_causal = False
    strides = _flash_strides(q) if flash else None
    if q.dtype.is_half:  # float32 inside, one rounding at the end (torch's CPU kernel's)
        if attn_mask is not None and attn_mask.dtype is q.dtype:
            attn_mask = attn_mask.float()
        q, k, v = q.float(), k.float(), v.float()
    elif strides is None:
        return _attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, door)
    args = (q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    out = _attention(*args, out_strides=strides)._impl
    strides = out.strides if strides is None else strides
    if out.strides == strides and out.dtype is query.dtype:  # the fused kernel wrote it so
        return Tensor(out)
    return Tensor(memory_formats.copy_with(out, strides, query.dtype))


def _flash_takes(q: Tensor, k: Tensor, v: Tensor, mask, dropout_p, enable_gqa) -> bool:
    """Whether torch's CPU flash kernel takes the call (else its math path): a 4-d query,
    key and value of one embedding size, last dims of unit stride (size 1 too), keys and
    rows to attend, one batch, one head count or GQA's multiple, no dropout, a 2-d or 4-d
    mask that broadcasts by size-1 dims."""
    if not (q.ndim == k.ndim == v.ndim == 4) or dropout_p != 0:
        return False
    (b, heads, length, e), (source, kv_heads) = q.shape, (k.shape[2], k.shape[1])
    if not length or not source or k.shape[3] != e or v.shape[3] != e:
        return False
    if any(t._impl.strides[3] != 1 for t in (q, k, v)):
        return False
    if mask is not None and not _flash_mask(mask.shape, (b, heads, length, source)):
        return False
    if k.shape[0] != b or v.shape[:3] != k.shape[:3]:
        return False
    return kv_heads == heads or (enable_gqa and kv_heads and heads % kv_heads == 0)


def _flash_strides(q: Tensor) -> tuple | None:
    """The strides of torch's flash kernel's result: dense in the query's dim order (HF's
    q.view(B, L, H, E).transpose(1, 2) gives a [B, L, H, E] result, whose
    .transpose(1, 2).view(B, L, H * E) works); None where that is row-major."""
    strides = memory_formats.inferred_strides(q.shape, q._impl.strides)
    return None if strides == contiguous_strides(q.shape) else strides


def _flash_mask(shape: tuple[int, ...], full: tuple[int, int, int, int]) -> bool:
    """Whether torch's flash kernel takes a mask of `shape` for attention of `full` (B, H,
    L, S): 2-d or 4-d, each dim the full size or 1 (a 3-d mask sends it down its math path)."""
    if len(shape) not in (2, 4):
        return False
    return all(n in (1, size) for n, size in zip(shape, full[-len(shape) :]))


def _attention(
    q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, door=None, out_strides=None
) -> Tensor:
    """scaled_dot_product_attention of checked float32 or float64 operands: laid out with
    `out_strides` where the fused kernel runs (it writes any layout), else row-major; a
    fused call with a fast `door` key is kept for the door."""
    name = "scaled_dot_product_attention"
    if enable_gqa and q.ndim >= 3:  # key and value heads repeated, each by its own factor
        heads = q.shape[-3]
        for t, what in ((k, "key"), (v, "value")):
            if t.shape[-3] and heads % t.shape[-3]:
                raise ValueError(
                    f"{name}: {heads} query heads are not a multiple of {t.shape[-3]} {what} heads"
                )
        k, v = (
            _repeat_heads(t, heads // t.shape[-3]) if t.shape[-3] not in (0, heads) else t
            for t in (k, v)
        )
    length, source = q.shape[-2], k.shape[-2]
    # Empty embeddings give zero scores, weighted alike, as in PyTorch (not 0 * inf).
    factor = 1.0 / math.sqrt(q.shape[-1] or 1) if scale is None else float(scale)
    if dropout_p == 0.0 and not _decoding(length, k):
        fused = _fused(q, k, v, attn_mask, is_causal, factor, door, out_strides)
        if fused is not None:
            return fused
    scores = linalg.matmul(q, k.transpose(-2, -1)) * factor
    if is_causal:
        attn_mask = _causal_mask(length, source, q.device)
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


def _causal_mask(length: int, source: int, device) -> Tensor:
    """[length, source] bool: query i keeps keys j <= i (the top-left triangle, as torch)."""
    rows = factories.arange(length, device=device).reshape(length, 1)
    cols = factories.arange(source, device=device).reshape(1, source)
    return ew.binary("ge", rows, cols)


# A query of at most DECODE_ROWS rows over keys of at least DECODE_KEY_BYTES (all of k, over
# its batch dims and heads, after a GQA repeat, in float32 for the half types: a decoding
# step over its cache) is two matrix-vector products and a softmax: the fused kernel would
# copy every key transposed and tile for BQ query rows ([1, 12, 1, 64] over 512 keys: 229
# -> 76 us, torch 56; 32 heads of 128 over 1024: 2824 -> 632, torch 2508). Fewer keys
# keep the fused kernel, whose one launch costs less than the separate ops' doors.
DECODE_ROWS = 2
DECODE_KEY_BYTES = 1 << 20


def _decoding(length: int, k: Tensor) -> bool:
    return length <= DECODE_ROWS and k.numel() * k.dtype.itemsize >= DECODE_KEY_BYTES


def _fused(q: Tensor, k: Tensor, v: Tensor, mask, is_causal: bool, scale: float, door=None,
           out_strides=None):  # fmt: skip
    """The attention by codegen/cpu/attention.py's fused kernel, or None where it does not
    apply (a GPU, batch dims that differ, value rows wider than EV_MAX, a mask
    whose batch dims do not split as the kernel's (batch, head) pairs); the result laid out
    with `out_strides` (default row-major). The kernel reads and writes a 4-d operand's
    matrices through its own two batch strides (HF's [B, L, H, E] query is no copy); other
    ranks have their batch dims merged. A call with a `door` key is kept for the fast door
    where it can replay it (_keep)."""
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
    heads = batch[1] if len(batch) == 2 else 1
    split = (math.prod(batch) // heads if heads else 0, heads)  # the kernel's (batch, head)
    kind, strides = ("causal" if is_causal else "none"), (0, 0, 0, 0)
    if mask is not None:
        mask = tensor_arg(mask, "scaled_dot_product_attention", "attn_mask")
        if mask.dtype is not bool_ and mask.dtype is not q.dtype:
            return None
        try:
            full = mask.expand((*batch, length, source))
        except ValueError:
            return None
        strides = views.compute_stride(full.shape, full.strides(), (*split, length, source))
        if strides is None:  # batch dims that no (batch, head) strides step through
            return None
        kind = "keep" if mask.dtype is bool_ else "additive"
        mask = full._impl
    qm, vm = (_matrices(t._impl, split, n) for t, n in ((q, length), (v, source)))
    km = _matrices(k._impl, split, source, rows=False)
    kt = _transposed_keys(km)
    shape = (*batch, length, width)
    result = empty_impl(shape, q.dtype, q.device)
    if out_strides is not None:
        result = memory_formats.restrided(result, out_strides)
    out = _matrices(result, split, length)
    if out.numel():
        kernel.run(qm, kt, vm, out, mask, kind, scale, strides)
        if door is not None and mask is None:
            _keep(door, (q._impl, v._impl, k._impl), (qm, vm, km), kt, out, kind, scale)
    return Tensor(result)


def _matrices(impl: TensorImpl, split: tuple[int, int], n: int, rows: bool = True) -> TensorImpl:
    """impl [..., n, last] as the kernel's [batch, head, n, last] (`split`), its `rows`
    unit-stride: a view where impl's layout allows, else a row-major copy."""
    if rows and impl.strides[-1] != 1 and impl.shape[-1] > 1:
        impl = clone_impl(impl)

    shape = (*split, n, impl.shape[-1])
    strides = views.compute_stride(impl.shape, impl.strides, shape)
    if strides is None:
        impl = clone_impl(impl)
        strides = views.compute_stride(impl.shape, impl.strides, shape)
    return views.derive(impl, shape, strides, impl.offset)


# The fast door of a plain call (float32/float64 query, key and value on the host, no mask,
# no dropout, no head repeat), keyed by dtype, their layouts, is_causal and scale: the
# launches the full door made, the keys' transposing copy into a fresh padded buffer and
# then the fused kernel, replayed with this call's addresses, where the query's and
# value's rows and the batched keys were the arguments themselves and both launches ran
# on the calling thread ([1, 4, 16, 32], 1 thread, one run: 35 -> 12 us; torch 10).
_DOOR: dict[tuple, tuple] = {}
_DOOR_MAX = 1024
_DOOR_DTYPES = (float32, float64)


def _door_key(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    """The fast door's key of a plain call (see above), or None: the full door takes it."""
    plain = fastpath.PLAIN
    if not (
        attn_mask is None
        and type(query) in plain
        and type(key) in plain
        and type(value) in plain
        and type(is_causal) is bool
        and enable_gqa is False
        and type(dropout_p) in (float, int)
        and dropout_p == 0
        and (scale is None or type(scale) is float)
        and fastpath._open()
    ):
        return None
    q, k, v = query._impl, key._impl, value._impl
    if q.dtype not in _DOOR_DTYPES or not (q.dtype is k.dtype is v.dtype):
        return None
    if q.device is not CPU or k.device is not CPU or v.device is not CPU:
        return None
    return (q.dtype, q.shape, q.strides, k.shape, k.strides, v.shape, v.strides, is_causal, scale)


def _keep(door: tuple, args: tuple, read: tuple, kt, out, kind: str, scale: float) -> None:
    """Keep the call the full door just made for `door` where it can be replayed: what it
    read (the query's rows, the value's, the batched keys) must be `args` themselves (the
    query, the value, the key), and the copy and the kernel must run inline."""
    from kael.codegen.cpu import attention as kernel

    if len(_DOOR) >= _DOOR_MAX or any(
        r.storage is not a.storage or r.offset != a.offset for r, a in zip(read, args)
    ):
        return
    q, v, keys = read
    if kernel.parallel(kernel.flops(q, v)):
        return
    src = views.transpose(keys, 2, 3)
    copy = fastpath.inline_copy(kt.dtype, kt.shape, kt.strides, src.strides)
    if copy is None or not kt.storage.nbytes:
        return
    template = kernel.words(q, kt, v, out, None, scale, (0, 0, 0, 0))
    template[:4] = [0, 0, 0, 0]
    fn = kernel.function(q.dtype, kind)
    items = kernel.items(q)
    launch = native_launch.describe(fn, template, (0, 1, 2, 3), 0)
    if launch is None:
        return
    size = q.dtype.itemsize
    padded = kt.storage.nbytes
    shape = (*args[0].shape[:-2], q.shape[2], v.shape[3])
    _DOOR[door] = (copy, padded, launch, items, out.numel() * size, shape, q.dtype)


def _replay(kept: tuple, q: TensorImpl, k: TensorImpl, v: TensorImpl) -> Tensor:
    """The remembered launches over this call's query, key and value: the attention."""
    (copy, copy_items), padded_bytes, launch, items, out_bytes, shape, dtype = kept
    size = dtype.itemsize
    padded, out = Storage.host(padded_bytes), Storage.host(out_bytes)
    native = fastpath._native
    native(copy.address, copy_items, padded.ptr, k.storage.ptr + k.offset * size)
    native(launch.address, items, q.storage.ptr + q.offset * size, padded.ptr,
           v.storage.ptr + v.offset * size, out.ptr)  # fmt: skip
    return fastpath.new_tensor(out, shape, dtype)


LINE = 64  # bytes of a cache line


def _transposed_keys(k: TensorImpl) -> TensorImpl:
    """k [B, H, S, E] as k^T [B, H, E, S] with rows an odd number of cache lines apart.
    The kernel reads a block of keys down its E rows: rows 4 KiB apart (S = 1024 in
    float32) all fall in one L1 set and evict each other at every step (causal
    [8, 8, 1024, 64]: 125 ms, 80 ms padded). Impl-level: no tensor op's checks per call."""
    *split, source, e = k.shape
    lines = -(-source * k.dtype.itemsize // LINE)
    row = (lines | 1) * LINE // k.dtype.itemsize
    padded = empty_impl((*split, e, row), k.dtype, k.device)
    kt = views.derive(padded, (*split, e, source), padded.strides, 0)
    fastpath.copy_remembered(kt, views.transpose(k, 2, 3))
    return kt


def _repeat_heads(t: Tensor, times: int) -> Tensor:
    """Each head of t (dim -3) repeated `times` times in place: [.., H, S, E] -> [.., H*times, S, E]."""
    shape = t.shape
    expanded = t.unsqueeze(-3).expand((*shape[:-2], times, *shape[-2:]))
    return expanded.reshape((*shape[:-3], shape[-3] * times, *shape[-2:]))


# ---- multi_head_attention_forward -----------------------------------------------------------


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """nn.MultiheadAttention's forward, in torch/nn/functional.py's steps: project query
    [L, N, E] (or unbatched [L, E]), key and value; split E into num_heads heads; attend
    (masks additive, bool True masked out); join the heads and project out. Returns the
    output and, with need_weights, the attention weights (averaged over heads or not)."""
    name = "multi_head_attention_forward"
    q, k, v = (
        tensor_arg(t, name, what) for t, what in ((query, "query"), (key, "key"), (value, "value"))
    )
    kpm = (
        None if key_padding_mask is None else tensor_arg(key_padding_mask, name, "key_padding_mask")
    )
    mask = None if attn_mask is None else tensor_arg(attn_mask, name, "attn_mask")
    batched = _mha_batched(q, k, v, kpm, mask, num_heads)
    if not batched:
        q, k, v = q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1)
        kpm = None if kpm is None else kpm.unsqueeze(0)
    tgt_len, bsz, embed_dim = q.shape
    kpm, mask, is_causal = _prepared_masks(kpm, mask, q.dtype, is_causal, need_weights)
    head_dim = _head_dim(embed_dim, embed_dim_to_check, num_heads)
    if use_separate_proj_weight:
        q, k, v = _separate_projection(
            q, k, v, (q_proj_weight, k_proj_weight, v_proj_weight), in_proj_bias
        )
    else:
        q, k, v = _packed_projection(q, k, v, in_proj_weight, in_proj_bias)
    heads = bsz * num_heads
    mask = _mask_3d(mask, tgt_len, k.shape[0], heads)
    k, v, mask, kpm = _with_bias_kv(k, v, mask, kpm, bias_k, bias_v, (static_k, static_v))
    q = q.reshape(tgt_len, heads, head_dim).transpose(0, 1)
    k = _split_heads(k, static_k, "static_k", heads, head_dim)
    v = _split_heads(v, static_v, "static_v", heads, head_dim)
    if add_zero_attn:
        k, v, mask, kpm = _with_zero_attn(k, v, mask, kpm)
    mask = _merged_masks(mask, kpm, bsz, num_heads, k.shape[1])
    dropout_p = float(dropout_p) if training else 0.0
    attend = _attention_with_weights if need_weights else _attention_by_sdpa
    out, weights = attend(q, k, v, mask, dropout_p, is_causal, (bsz, num_heads))
    out = linear(out, out_proj_weight, out_proj_bias)
    out = out.reshape(tgt_len, bsz, out.shape[-1])
    if weights is not None and average_attn_weights:
        weights = reductions.mean(weights, 1)
    if batched:
        return out, weights
    return out.squeeze(1), None if weights is None else weights.squeeze(0)


def _mha_batched(q: Tensor, k: Tensor, v: Tensor, kpm, mask, num_heads: int) -> bool:
    """Whether the inputs are batched (3-D query) or not (2-D), checking every rank as
    PyTorch's _mha_shape_check does."""
    if q.ndim not in (2, 3):
        raise ValueError(
            "query should be unbatched 2D or batched 3D tensor but received"
            f" {q.ndim}-D query tensor"
        )
    if not (q.dtype.is_floating_point and q.dtype is k.dtype is v.dtype):
        raise TypeError(
            "multi_head_attention_forward: expected query, key and value of one floating point"
            f" dtype, got {q.dtype}, {k.dtype} and {v.dtype}"
        )
    batched = q.ndim == 3
    kind = "batched (3-D)" if batched else "unbatched (2-D)"
    if k.ndim != q.ndim or v.ndim != q.ndim:
        raise ValueError(
            f"For {kind} `query`, expected `key` and `value` to be {q.ndim}-D but found"
            f" {k.ndim}-D and {v.ndim}-D tensors respectively"
        )
    if kpm is not None and kpm.ndim != q.ndim - 1:
        raise ValueError(
            f"For {kind} `query`, expected `key_padding_mask` to be `None` or {q.ndim - 1}-D"
            f" but found {kpm.ndim}-D tensor instead"
        )
    if mask is not None and mask.ndim not in (2, 3):
        raise ValueError(
            f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found"
            f" {mask.ndim}-D tensor instead"
        )
    if not batched and mask is not None and mask.ndim == 3:
        expected = (num_heads, q.shape[0], k.shape[0])
        if mask.shape != expected:
            raise ValueError(
                f"Expected `attn_mask` shape to be {list(expected)} but got {list(mask.shape)}"
            )
    return batched


def _prepared_masks(kpm, mask, dtype, is_causal: bool, need_weights: bool) -> tuple:
    """Both masks made additive (PyTorch's _canonical_mask); is_causal kept only where
    scaled_dot_product_attention can apply it instead of attn_mask."""
    if kpm is not None and mask is not None and kpm.dtype is not mask.dtype:
        user_warning.warn(
            "Support for mismatched key_padding_mask and attn_mask is deprecated. Use same"
            " type for both instead."
        )
    kpm = _additive_mask(kpm, "key_padding_mask", dtype)
    if is_causal and mask is None:
        raise ValueError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer module"
            " method `generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and kpm is None and not need_weights:
        return kpm, None, True
    return kpm, _additive_mask(mask, "attn_mask", dtype), is_causal and kpm is None


def _additive_mask(mask: Tensor | None, what: str, dtype) -> Tensor | None:
    """A bool mask (True: masked out) as a float one, -inf where True; a float one as is."""
    if mask is None or mask.dtype.is_floating_point:
        return mask
    if mask.dtype is not bool_:
        raise TypeError(f"only bool and floating types of {what} are supported, got {mask.dtype}")
    return factories.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, -math.inf)


def _head_dim(embed_dim: int, embed_dim_to_check: int, num_heads: int) -> int:
    if embed_dim != embed_dim_to_check:
        raise ValueError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    if num_heads <= 0 or embed_dim % num_heads:
        raise ValueError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    return embed_dim // num_heads


def _packed_projection(q: Tensor, k: Tensor, v: Tensor, weight, bias) -> tuple[Tensor, ...]:
    """q, k and v through the three [E, E] blocks of in_proj_weight [3E, E] (and bias)."""
    if k.shape != v.shape:
        raise ValueError(f"key shape {list(k.shape)} does not match value shape {list(v.shape)}")
    if weight is None:
        raise ValueError("use_separate_proj_weight is False but in_proj_weight is None")
    w = tensor_arg(weight, "multi_head_attention_forward", "in_proj_weight")
    e = q.shape[-1]
    if w.shape != (3 * e, e) or k.shape[-1] != e:
        raise ValueError(
            f"expecting in_proj_weight of shape {[3 * e, e]} and key and value of embedding"
            f" size {e}, but got in_proj_weight {list(w.shape)} and key {list(k.shape)}"
        )
    biases = (None, None, None) if bias is None else _bias_thirds(bias, e)
    return tuple(linear(x, wx, bx) for x, wx, bx in zip((q, k, v), w.chunk(3), biases))


def _bias_thirds(bias, e: int) -> tuple[Tensor, ...]:
    b = tensor_arg(bias, "multi_head_attention_forward", "in_proj_bias")
    if b.shape != (3 * e,):
        raise ValueError(f"expecting in_proj_bias shape of {[3 * e]}, but got {list(b.shape)}")
    return b.chunk(3)


def _separate_projection(q: Tensor, k: Tensor, v: Tensor, weights, bias) -> tuple[Tensor, ...]:
    """q, k and v through their own weights [E, E], [E, kdim] and [E, vdim] (PyTorch's
    _in_projection, with its shape checks)."""
    if k.shape[:2] != v.shape[:2]:
        raise ValueError(
            f"key's sequence and batch dims {list(k.shape[:2])} do not match value's"
            f" {list(v.shape[:2])}"
        )
    e = q.shape[-1]
    biases = (None, None, None) if bias is None else _bias_thirds(bias, e)
    projected = []
    for x, w, b, what in zip((q, k, v), weights, biases, ("query", "key", "value")):
        if w is None:
            raise ValueError(f"use_separate_proj_weight is True but {what[0]}_proj_weight is None")
        w = tensor_arg(w, "multi_head_attention_forward", f"{what[0]}_proj_weight")
        if w.shape != (e, x.shape[-1]):
            raise ValueError(
                f"expecting {what} weights shape of {[e, x.shape[-1]]}, but got {list(w.shape)}"
            )
        projected.append(linear(x, w, b))
    return tuple(projected)


def _mask_3d(mask: Tensor | None, tgt_len: int, src_len: int, heads: int) -> Tensor | None:
    """attn_mask as [1 or N * num_heads, L, S], its shape checked."""
    if mask is None:
        return None
    want = (tgt_len, src_len) if mask.ndim == 2 else (heads, tgt_len, src_len)
    if mask.shape != want:
        raise ValueError(
            f"The shape of the {mask.ndim}D attn_mask is {list(mask.shape)}, but should be"
            f" {list(want)}."
        )
    return mask.unsqueeze(0) if mask.ndim == 2 else mask


def _pad_key(mask: Tensor | None) -> Tensor | None:
    """A mask with one more key column, 0 (attended)."""
    return None if mask is None else pad(mask, (0, 1))


def _with_bias_kv(k, v, mask, kpm, bias_k, bias_v, statics) -> tuple:
    """bias_k and bias_v [1, 1, E] appended to every batch's keys and values as one more
    source position, the masks extended to it."""
    if bias_k is None or bias_v is None:
        if bias_k is not None or bias_v is not None:
            which = "bias_k" if bias_k is not None else "bias_v"
            other = "bias_v" if bias_k is not None else "bias_k"
            raise ValueError(f"{which} is set but {other} is None")
        return k, v, mask, kpm
    if statics[0] is not None or statics[1] is not None:
        which = "key" if statics[0] is not None else "value"
        raise ValueError(f"bias cannot be added to static {which}.")
    bsz = k.shape[1]
    k = index_ops.cat([k, tensor_arg(bias_k, "multi_head_attention_forward").repeat(1, bsz, 1)])
    v = index_ops.cat([v, tensor_arg(bias_v, "multi_head_attention_forward").repeat(1, bsz, 1)])
    return k, v, _pad_key(mask), _pad_key(kpm)


def _split_heads(x: Tensor, static, what: str, heads: int, head_dim: int) -> Tensor:
    """Projected keys or values [S, N, E] as [N * num_heads, S, head_dim], or the given
    static ones, checked."""
    if static is None:
        return x.reshape(x.shape[0], heads, head_dim).transpose(0, 1)
    s = tensor_arg(static, "multi_head_attention_forward", what)
    if s.ndim != 3 or s.shape[0] != heads or s.shape[2] != head_dim:
        raise ValueError(
            f"expecting {what} of shape [{heads}, S, {head_dim}], but got {list(s.shape)}"
        )
    return s


def _with_zero_attn(k, v, mask, kpm) -> tuple:
    """One more source position of zero keys and values, the masks extended to it."""
    zeros = factories.zeros((k.shape[0], 1, k.shape[2]), dtype=k.dtype, device=k.device)
    k = index_ops.cat([k, zeros], 1)
    v = index_ops.cat([v, zeros.to(v.dtype)], 1)
    return k, v, _pad_key(mask), _pad_key(kpm)


def _merged_masks(mask, kpm, bsz: int, num_heads: int, src_len: int) -> Tensor | None:
    """attn_mask plus key_padding_mask [N, S] spread over the heads: [N * num_heads, 1, S]."""
    if kpm is None:
        return mask
    if kpm.shape != (bsz, src_len):
        got = kpm.shape[0] if kpm.shape[0] != bsz else kpm.shape[1]
        dim, want = (0, bsz) if kpm.shape[0] != bsz else (1, src_len)
        raise ValueError(f"Expected key_padded_mask.shape[{dim}] to be {want}, but got {got}")
    spread = kpm.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
    spread = spread.reshape(bsz * num_heads, 1, src_len)
    return spread if mask is None else mask + spread


def _attention_with_weights(q, k, v, mask, dropout_p: float, is_causal: bool, dims) -> tuple:
    """softmax(q k^T / sqrt(head_dim) + mask) v, keeping the weights [N, H, L, S]; the
    output as [L * N, E]."""
    _, tgt_len, head_dim = q.shape
    scores = linalg.matmul(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
    weights = nn.softmax(scores if mask is None else scores + mask, -1)
    if dropout_p > 0.0:
        weights = random.dropout(weights, dropout_p)
    out = linalg.matmul(weights, v).transpose(0, 1)
    out = out.reshape(tgt_len * dims[0], dims[1] * v.shape[-1])
    return out, weights.reshape(*dims, tgt_len, k.shape[1])


def _attention_by_sdpa(q, k, v, mask, dropout_p: float, is_causal: bool, dims) -> tuple:
    """The same attention by scaled_dot_product_attention over [N, H, L, head_dim], no
    weights kept; the output as [L * N, E]."""
    bsz, num_heads = dims
    _, tgt_len, head_dim = q.shape
    if mask is not None:
        mask = (
            mask.unsqueeze(0)
            if mask.shape[0] == 1
            else mask.reshape(bsz, num_heads, mask.shape[1], k.shape[1])
        )
    q, k, v = (x.reshape(bsz, num_heads, x.shape[1], head_dim) for x in (q, k, v))
    out = scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal)
    return out.permute(2, 0, 1, 3).reshape(tgt_len * bsz, num_heads * v.shape[-1]), None


FUNCTIONS = {
    fn.__name__: op_door(fn.__name__, fn)
    for fn in (scaled_dot_product_attention, multi_head_attention_forward)
}
