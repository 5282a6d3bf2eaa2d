"""torch.nn.functional's small layers, composed from kael's ops: linear, bilinear,
embedding, one_hot, normalize, rms_norm, pixel_shuffle and pixel_unshuffle (each works eagerly, inside
@kael.compile and on cuda tensors, as its ops do; eager rms_norm of a cuda tensor runs the
GPU's row kernel instead)."""

from __future__ import annotations

from kael.frontend import elementwise as ew
from kael.frontend import (
    factories,
    fastpath,
    gpu_rows,
    index_ops,
    linalg,
    matrix_norms,
    memory_formats,
    nn,
    reductions,
    views,
)
from kael.frontend.formula import launch
from kael.frontend.margins import distance
from kael.frontend.outputs import tensor_arg
from kael.frontend.tensor import Tensor, empty_impl
from kael.frontend.tracing import op_door
from kael.runtime.device import CPU
from kael.runtime.dtypes import bfloat16, float16, float32, float64, int32, int64
from kael.runtime.errors import TypeError, ValueError
from kael.runtime.storage import Storage
from kael.runtime.threadpool import get_num_threads


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """The rows of `weight` named by the integer `input`, in input's shape plus the row.
    max_norm first renormalizes the named rows in place (embedding_renorm_). padding_idx,
    scale_grad_by_freq and sparse only matter to gradients (kael has none yet): checked,
    not used."""
    idx, w = tensor_arg(input, "embedding"), tensor_arg(weight, "embedding", "weight")
    if idx.dtype not in (int32, int64):
        raise TypeError(f"embedding: expected int64 or int32 indices, got {idx.dtype}")
    if w.ndim != 2:
        raise ValueError(f"embedding: weight must be 2-D, got {w.ndim}-D")
    if padding_idx is not None and not -w.shape[0] <= padding_idx < w.shape[0]:
        raise ValueError(f"embedding: padding_idx {padding_idx} must be within num_embeddings")
    flat = idx.reshape(-1).to(int64)
    if max_norm is not None:
        embedding_renorm_(w, flat, max_norm, norm_type)
    rows = index_ops.index_select(w, 0, flat)
    return rows.reshape((*idx.shape, w.shape[1]))


def embedding_renorm_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """weight's rows that `indices` name, scaled in place by max_norm / (norm + 1e-7) where
    their norm_type-norm exceeds max_norm: PyTorch's embedding_renorm_, whose scale is a
    double scalar multiplied in the row's compute dtype."""
    flat = indices.reshape(-1).to(int64)
    if not flat.numel():
        return weight
    rows = index_ops.index_select(weight, 0, flat)
    if not rows.dtype.is_floating_point:
        raise TypeError(
            f"norm(): input dtype should be either floating point or complex. Got {rows.dtype}"
        )
    norms = rows.norm(norm_type, dim=1, keepdim=True).to(float64)
    scale = ew.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    compute = float32 if rows.dtype.is_half else rows.dtype
    scaled = rows.to(compute) * scale.to(compute)
    return weight.index_copy_(0, flat, scaled.to(weight.dtype))


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot rows of the int64 class indices (num_classes -1: max + 1)."""
    x = tensor_arg(tensor, "one_hot")
    if x.dtype is not int64:
        raise TypeError(f"one_hot is only applicable to index tensor of type int64, got {x.dtype}")
    num_classes = views.as_int(num_classes, "num_classes")
    if x.numel() and int(x.amin()) < 0:
        raise ValueError("Class values must be non-negative.")
    if num_classes == -1:
        if not x.numel():
            raise ValueError("Can not infer total number of classes from empty tensor.")
        num_classes = int(x.amax()) + 1
    elif num_classes < 1:
        raise ValueError(f"one_hot: num_classes must be positive or -1, got {num_classes}")
    elif x.numel() and int(x.amax()) >= num_classes:
        raise ValueError("Class values must be smaller than num_classes.")
    classes = factories.arange(num_classes, device=x.device)
    target = empty_impl((*x.shape, num_classes), int64, x.device)  # row-major, as torch's
    formula = lambda a, c: a.eq(c)  # noqa: E731
    return launch(("one_hot",), [x.unsqueeze(-1), classes], int64, formula, out=target)


def normalize(
    input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None
) -> Tensor:
    """input / max(||input||_p along dim, eps), the norm linalg.vector_norm's (half types
    accumulate in float32, as torch's: squaring in float16 overflowed past 256)."""
    x = tensor_arg(input, "normalize")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise TypeError(f"normalize: expected a floating point or complex input, got {x.dtype}")
    d = views.wrap_dim(dim, x.ndim) if x.ndim else None
    norm = matrix_norms.vector_norm(x, p, d, keepdim=True)  # real, for a complex x too
    return ew.binary("div", x, norm.clamp(min=eps), out)


def rms_norm(
    input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """x / sqrt(mean(x^2 over the last len(normalized_shape) dims) + eps) * weight; eps
    None is the machine epsilon of the compute dtype, as in PyTorch. Eager on a cuda
    tensor (weight of its dtype, or none), one row kernel computes the same composition
    (frontend/gpu_rows.py), as on a host float32/float64 tensor (nn.rms_norm_rows)."""
    x = tensor_arg(input, "rms_norm")
    if not x.dtype.is_floating_point:
        raise TypeError(f"rms_norm: expected a floating point input, got {x.dtype}")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[len(x.shape) - len(shape) :]) != shape or len(shape) > x.ndim:
        raise ValueError(
            f"rms_norm: normalized_shape {list(shape)} does not match the last dims of"
            f" input of shape {list(x.shape)}"
        )
    if weight is not None and tuple(weight.shape) != shape:
        raise ValueError(f"rms_norm: weight of shape {list(weight.shape)}, expected {list(shape)}")
    if eps is None:
        eps = _MACHINE_EPS[x.dtype]
    plain = weight is None or (
        type(weight) in fastpath.PLAIN and gpu_rows.params_fit(x._impl, weight)
    )
    if plain and shape and type(eps) in (int, float) and gpu_rows.takes(x._impl, len(shape)):
        return Tensor(gpu_rows.rms_norm(x._impl, len(shape), weight, eps))
    if shape and type(eps) in (int, float):
        done = nn.rms_norm_rows(x, len(shape), weight, eps)
        if done is not None:
            return done
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    wide = x.float() if x.dtype.is_half else x  # PyTorch: half types in float32
    scale = (reductions.mean(wide * wide, dims, keepdim=True) + eps).rsqrt()
    y = wide * scale if weight is None else wide * scale * weight
    # rounded once, as PyTorch does, whatever weight's dtype; in x's suggested memory
    # format (channels-last stays so, any other order is row-major), as torch's kernel's
    return y.to(x.dtype).contiguous(memory_format=memory_formats.suggested(x._impl))


# rms_norm's default eps: the machine epsilon of the dtype it computes in (float32 for the
# half types, as PyTorch's opmath does).
_MACHINE_EPS = {float16: 2.0**-23, bfloat16: 2.0**-23, float32: 2.0**-23, float64: 2.0**-52}


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """[*, C r^2, H, W] -> [*, C, H r, W r]."""
    x = tensor_arg(input, "pixel_shuffle")
    r = views.as_int(upscale_factor, "upscale_factor")
    if x.ndim < 3:
        raise ValueError(f"pixel_shuffle expects input to have at least 3 dimensions, got {x.ndim}")
    if r <= 0:
        raise ValueError(f"pixel_shuffle expects a positive upscale_factor, got {r}")
    *lead, c, h, w = x.shape
    if c % (r * r):
        raise ValueError(
            f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the"
            f" square of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    n = len(lead)
    y = x.reshape((*lead, c // (r * r), r, r, h, w))
    y = y.permute((*range(n), n, n + 3, n + 1, n + 4, n + 2))
    return _input_format(y.reshape((*lead, c // (r * r), h * r, w * r)), x)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """[*, C, H r, W r] -> [*, C r^2, H, W]: pixel_shuffle undone (an empty input too:
    torch returns an empty one of the input's own shape)."""
    x = tensor_arg(input, "pixel_unshuffle")
    r = views.as_int(downscale_factor, "downscale_factor")
    if x.ndim < 3:
        raise ValueError(
            f"pixel_unshuffle expects input to have at least 3 dimensions, got {x.ndim}"
        )
    if r <= 0:
        raise ValueError(f"pixel_unshuffle expects a positive downscale_factor, got {r}")
    *lead, c, h, w = x.shape
    if h % r or w % r:
        raise ValueError(
            f"pixel_unshuffle expects height {h} and width {w} to be divisible by"
            f" downscale_factor {r}"
        )
    n = len(lead)
    y = x.reshape((*lead, c, h // r, r, w // r, r))
    y = y.permute((*range(n), n, n + 2, n + 4, n + 1, n + 3))
    return _input_format(y.reshape((*lead, c * r * r, h // r, w // r)), x)


def _input_format(y: Tensor, x: Tensor) -> Tensor:
    """y (row-major) in the format a 4-d x suggests: torch's pixel shuffles keep a
    channels-last input's."""
    fmt = memory_formats.suggested(x._impl) if x.ndim == 4 else memory_formats.contiguous_format
    return memory_formats.in_format(y, fmt)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight^T + bias: weight is [out_features, in_features]."""
    door = _linear_key(input, weight, bias)
    if door is not None:
        kept = _LINEAR.get(door)
        if kept is not None:
            return _replay_linear(kept, input._impl, weight._impl, bias)
    y = _linear(input, weight, bias)
    if door is not None and len(_LINEAR) < _LINEAR_MAX:
        _keep_linear(door, input, weight, bias, y)
    return y


def _linear(input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    x, w = tensor_arg(input, "linear"), tensor_arg(weight, "linear", "weight")
    if w.ndim not in (1, 2):
        raise ValueError(f"linear: weight must be 1-D or 2-D, got {w.ndim}-D")
    b = None if bias is None else tensor_arg(bias, "linear", "bias")
    for what, t in (("weight", w), ("bias", b)):  # torch's addmm promotes nothing here
        if t is not None and t.dtype is not x.dtype:
            raise TypeError(
                f"linear: expected input and {what} to have the same dtype, but got "
                f"{x.dtype} and {t.dtype}"
            )
    if b is not None and x.dtype.is_half:  # float32 product and bias, rounded once, as torch
        y = linalg.matmul(x.float(), (w.T if w.ndim == 2 else w).float())
        return (y + b.float()).to(x.dtype)
    y = linalg.matmul(x, w.T if w.ndim == 2 else w)
    return y if b is None else y + b


# The fast door of a linear layer on plain host tensors, keyed by the three operands' dtypes
# and layouts and the thread count: the product the matmul door keeps for x @ w.T into a
# fresh buffer, then the bias added in place by the add kept for its layouts (the full
# door's x @ w.T + b, in fewer frames and one buffer: [64, 64] x [32, 64], 1 thread,
# 13.9 -> 8.2 us; torch 6.0).
_LINEAR: dict[tuple, tuple] = {}
_LINEAR_MAX = 1024


def _linear_key(input, weight, bias) -> tuple | None:
    """The door's key of linear(input, weight, bias), or None where the full door takes it."""
    plain = fastpath.PLAIN
    if type(input) not in plain or type(weight) not in plain or not fastpath._open():
        return None
    x, w = input._impl, weight._impl
    if x.device is not CPU or w.device is not CPU or len(w.shape) != 2:
        return None
    key = (x.dtype, x.shape, x.strides, w.dtype, w.shape, w.strides, get_num_threads())
    if bias is None:
        return key
    if type(bias) not in plain or bias._impl.device is not CPU:
        return None
    b = bias._impl
    return (*key, b.dtype, b.shape, b.strides)


def _keep_linear(door: tuple, x: Tensor, w: Tensor, bias: Tensor | None, y: Tensor) -> None:
    """Keep the product and the bias's add that the full door just remembered (a half
    dtype's float32 detour is not kept)."""
    if x.dtype.is_half or x.ndim < 2 or w.ndim != 2 or not y.numel():
        return
    product = fastpath.remembered_product(x, w.T)
    if product is None or product.shape != y.shape:
        return
    add = None
    if bias is not None:
        # y is the add's fresh dense result: the product's layout, which the add read
        add = fastpath.remembered_shaped(fastpath.binary_key("add", y, bias, y.shape))
        if add is None:
            return
    _LINEAR[door] = (product, add)


def _replay_linear(kept: tuple, x, w, bias: Tensor | None) -> Tensor:
    """x @ w.T (+ bias, in place) over a fresh buffer (x, w: impls)."""
    product, add = kept
    size = product.itemsize
    storage = Storage.host(product.nbytes)
    pa, pb = x.storage.ptr + x.offset * size, w.storage.ptr + w.offset * size
    fastpath.run_product(product, pa, pb, storage.ptr)
    y = fastpath.new_tensor(storage, product.shape, product.dtype)
    if add is not None:
        fastpath._launch_shaped(add, (y._impl, bias._impl), None, y._impl)
    return y


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y[..., o] = x1[..., i] W[o, i, j] x2[..., j] + b[o], through one matrix product."""
    a, b = tensor_arg(input1, "bilinear"), tensor_arg(input2, "bilinear")
    w = tensor_arg(weight, "bilinear", "weight")
    if w.ndim != 3 or a.shape[-1] != w.shape[1] or b.shape[-1] != w.shape[2]:
        raise ValueError(
            f"bilinear: weight {list(w.shape)} must be [out, in1, in2] for inputs"
            f" {list(a.shape)} and {list(b.shape)}"
        )
    if a.shape[:-1] != b.shape[:-1]:
        raise ValueError(
            f"bilinear: input1 {list(a.shape)} and input2 {list(b.shape)} need the same batch dims"
        )
    out, in1, in2 = w.shape
    mixed = linalg.matmul(a, w.permute(1, 0, 2).reshape(in1, out * in2))  # [..., out * in2]
    y = reductions.sum(mixed.reshape((*a.shape[:-1], out, in2)) * b.unsqueeze(-2), -1)
    return y if bias is None else y + tensor_arg(bias, "bilinear", "bias")


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """[N, C, *] with its C channels regrouped: channel g * (C / groups) + i goes to
    i * groups + g (ShuffleNet's shuffle), one copy."""
    x = tensor_arg(input, "channel_shuffle")
    groups = views.as_int(groups, "groups")
    if x.ndim < 3:
        raise ValueError(
            f"channel_shuffle expects input to have at least 3 dimensions, but got input with sizes {list(x.shape)}"
        )
    if groups <= 0 or x.shape[1] % groups:
        raise ValueError(
            f"Number of channels must be divisible by groups. Got {x.shape[1]} channels and {groups} groups."
        )
    n, c, rest = x.shape[0], x.shape[1], x.shape[2:]
    grouped = x.reshape((n, groups, c // groups, *rest)).transpose(1, 2)
    return grouped.reshape((n, c, *rest))


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distances between the rows of [N, M] input, pairs i < j in row-major
    order: N (N - 1) / 2 values."""
    x = tensor_arg(input, "pdist")
    if x.ndim != 2:
        raise ValueError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    if not x.dtype.is_floating_point:
        raise TypeError(f"pdist only supports floating-point dtypes, got {x.dtype}")
    if p < 0:
        raise ValueError(f"pdist only supports non-negative p values, got {p}")
    n = x.shape[0]
    if n < 2:
        return factories.empty((0,), dtype=x.dtype, device=x.device)
    upper = factories.ones((n, n), dtype=int64, device=x.device).triu(1)
    pairs = index_ops.nonzero(upper)  # [N (N - 1) / 2, 2], the pairs in row-major order
    diff = index_ops.index_select(x, 0, pairs[:, 0]) - index_ops.index_select(x, 0, pairs[:, 1])
    return distance(diff, p)


FUNCTIONS = {
    fn.__name__: op_door(fn.__name__, fn)
    for fn in (
        embedding,
        one_hot,
        normalize,
        rms_norm,
        pixel_shuffle,
        pixel_unshuffle,
        linear,
        bilinear,
        channel_shuffle,
        pdist,
    )
}
FUNCTIONS["native_channel_shuffle"] = FUNCTIONS["channel_shuffle"]
# an embedding lookup is one take_rows launch: remembered by the fast door per layout
FUNCTIONS["embedding"] = fastpath.keyed(embedding, FUNCTIONS["embedding"])
