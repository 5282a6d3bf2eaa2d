"""Autocast: within `with kael.autocast(device_type, dtype):` the ops PyTorch runs in lower
precision (matmuls, convolutions, attention, the recurrent layers) take their floating
inputs in `dtype`, and the ops it keeps in float32 (losses, pooling and padding of volumes,
linear algebra, the FFTs and stft, quantile, cdist, ...) take float16/bfloat16 inputs as
float32. The rest
run as they are. Each device type has PyTorch's own table: TABLES for CPU tensors,
CUDA_TABLES for cuda ones (its lists in ATen/autocast_mode.h: also exp, log, pow, softmax,
sum, the norms, layer_norm and interpolation in float32; the "promote" ops already promote
in kael; binary_cross_entropy, which torch refuses under CUDA autocast, is left as is);
the default dtype is bfloat16 on the CPU and float16 on CUDA; float64 is never cast.

The state is per thread, as PyTorch's. Each op named in a table is wrapped once where it
is published (kael.NAME, kael.nn.functional.NAME, kael.linalg.NAME, Tensor.NAME); while no
thread has autocast on, a wrapper costs one global read. Under kael.compile the casts are
ops of the trace, and the autocast state is part of a plan's signature.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

from kael.frontend.tensor import Tensor
from kael.runtime import sync, user_warning
from kael.runtime.device import parse_device
from kael.runtime.dtypes import DType, as_dtype, bfloat16, float16, float32, float64
from kael.runtime.errors import TypeError, ValueError

LOWER, FLOAT32 = "lower", "float32"

# The ops in each table, by the name they have where they are published.
_MATMULS = ("matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "einsum", "tensordot")
_CONVS = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
          "conv_transpose3d")  # fmt: skip
# torch lowers nn.LSTM (mkldnn_rnn_layer) and the Elman layers and cells (their matmuls);
# GRU and the LSTM and GRU cells stay in float32 on the CPU
_RECURRENT = ("lstm", "rnn_tanh", "rnn_relu", "rnn_tanh_cell", "rnn_relu_cell")
_LOSSES = (
    "mse_loss", "cross_entropy", "nll_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "kl_div", "binary_cross_entropy", "binary_cross_entropy_with_logits", "ctc_loss",
    "margin_ranking_loss", "triplet_margin_loss", "cosine_embedding_loss",
    "hinge_embedding_loss", "soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
    "poisson_nll_loss",
)  # fmt: skip
# Tensor's methods of the matmul family (and prelu), lowered by both tables
_TENSOR_LOWER = (
    "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "__matmul__", "__rmatmul__", "prelu",
)  # fmt: skip
_LINALG = ("cholesky", "cholesky_ex", "inv", "inv_ex", "solve", "solve_ex", "lstsq", "qr",
           "svd", "svdvals", "eigh", "eigvalsh", "pinv", "matrix_exp", "det", "slogdet",
           "lu_factor", "lu", "lu_solve", "householder_product")  # fmt: skip

# torch.fft's transforms (the frequency helpers take no tensors), and stft and istft
_FFT = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "fftn", "ifftn",
        "rfft2", "irfft2", "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn")  # fmt: skip

TABLES: dict[str, dict[str, str]] = {
    "kael": {
        **dict.fromkeys((*_MATMULS, *_CONVS, "prelu"), LOWER),
        **dict.fromkeys(
            (
                *_LOSSES,
                "prod",
                "quantile",
                "nanquantile",
                "cdist",
                "trace",
                "inverse",
                "pinverse",
                "cholesky",
                "cholesky_solve",
                "cholesky_inverse",
                "lu_solve",
                "stft",
                "istft",
            ),
            FLOAT32,
        ),  # fmt: skip
    },
    "functional": {
        **dict.fromkeys(
            (
                *_CONVS,
                "linear",
                "prelu",
                "scaled_dot_product_attention",
                "multi_head_attention_forward",
            ),
            LOWER,
        ),  # fmt: skip
        **dict.fromkeys(
            (
                *_LOSSES,
                "avg_pool3d",
                "max_pool3d",
                "adaptive_avg_pool3d",
                "grid_sample",
                "max_unpool2d",
                "max_unpool3d",
            ),
            FLOAT32,
        ),  # fmt: skip
    },
    "linalg": {**dict.fromkeys(_LINALG, FLOAT32), "matmul": LOWER},
    "fft": dict.fromkeys(_FFT, FLOAT32),
    "recurrent": dict.fromkeys(_RECURRENT, LOWER),
    "special": {},
    "Tensor": {
        **dict.fromkeys(_TENSOR_LOWER, LOWER),
        **dict.fromkeys(
            ("prod", "quantile", "nanquantile", "trace", "inverse", "pinverse", "cholesky"), FLOAT32
        ),  # fmt: skip
    },
}

# PyTorch's CUDA table (AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32 and, run in float32
# too, AT_FORALL_FP32_SET_OPT_DTYPE), by where kael publishes each op.
_CUDA_LOWER = (*_MATMULS, "mv", "addmv", "addr", "chain_matmul", *_CONVS, "conv_tbc", "prelu")
_CUDA_MATH = (
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
    "reciprocal", "rsqrt", "sinh", "tan", "pow", "logsumexp", "dist", "renorm", "prod",
    "cumsum", "cumprod", "sum", "softmax", "log_softmax",
)  # fmt: skip
_CUDA_LOSSES = tuple(n for n in _LOSSES if n not in ("binary_cross_entropy", "ctc_loss"))
# the losses torch also publishes as torch.NAME
_TOP_LEVEL_LOSSES = (
    "cross_entropy", "kl_div", "binary_cross_entropy_with_logits", "margin_ranking_loss",
    "triplet_margin_loss", "cosine_embedding_loss", "hinge_embedding_loss", "poisson_nll_loss",
)  # fmt: skip
_CUDA_FUNCTIONAL_FP32 = (
    *_CUDA_LOSSES, "softplus", "layer_norm", "rms_norm", "group_norm", "cosine_similarity",
    "pdist", "softmax", "log_softmax", "interpolate", "upsample", "upsample_nearest",
    "upsample_bilinear",
)  # fmt: skip
CUDA_TABLES: dict[str, dict[str, str]] = {
    "kael": {
        **dict.fromkeys(_CUDA_LOWER, LOWER),
        **dict.fromkeys(
            (*_CUDA_MATH, *_TOP_LEVEL_LOSSES, "cosine_similarity", "pdist", "cdist"), FLOAT32
        ),
    },
    "functional": {
        **dict.fromkeys(
            (
                *_CONVS,
                "linear",
                "prelu",
                "scaled_dot_product_attention",
                "multi_head_attention_forward",
            ),
            LOWER,
        ),  # fmt: skip
        **dict.fromkeys(_CUDA_FUNCTIONAL_FP32, FLOAT32),
    },
    "linalg": {
        **dict.fromkeys(("matmul", "vecdot", "multi_dot"), LOWER),
        **dict.fromkeys(("vector_norm", "matrix_norm"), FLOAT32),
    },
    "fft": {},
    "recurrent": dict.fromkeys(
        (*_RECURRENT, "lstm_cell", "gru_cell", "gru", "rnn_tanh_cell", "rnn_relu_cell"), LOWER
    ),
    # kael.special's aliases of those ops: wrapped with them, so each stays the same object
    "special": dict.fromkeys(
        ("erfinv", "expm1", "log1p", "logsumexp", "softmax", "log_softmax"), FLOAT32
    ),
    "Tensor": {
        **dict.fromkeys((*_TENSOR_LOWER, "mv", "addmv", "addr"), LOWER),
        **dict.fromkeys((*_CUDA_MATH, "__pow__", "__rpow__", "norm"), FLOAT32),
    },
}

DEFAULT_DTYPES = {"cpu": bfloat16, "cuda": float16}
_LOWER_DTYPES = (float16, bfloat16)


class _State(threading.local):
    def __init__(self) -> None:
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = dict(DEFAULT_DTYPES)


_state = _State()
# How many threads have autocast on for some device: 0 lets every wrapper skip its checks.
ACTIVE = [0]
_count_lock = sync.lock(fork_rank=sync.AUTOCAST_RANK)  # fork() never splits an install


def _device_type(device_type) -> str:
    """'cpu' or 'cuda' from a device string ("cuda:0", "cpu:0" too)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    kind = device_type.split(":", 1)[0]
    return kind if kind in ("cpu", "cuda") else parse_device(device_type).type


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on in this thread for the device type (CUDA's when none)."""
    return _state.enabled[_device_type(device_type or "cuda")]


def get_autocast_dtype(device_type: str) -> DType:
    """The lower-precision dtype autocast uses for the device type in this thread."""
    return _state.dtype[_device_type(device_type)]


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """Turn autocast on or off for a device type in this thread (what autocast's block does)."""
    kind = _device_type(device_type)
    if kind == "cuda" and enabled and _pending:
        _install_cuda_only()
    was = any(_state.enabled.values())
    _state.enabled[kind] = bool(enabled)
    now = any(_state.enabled.values())
    if was != now:
        with _count_lock:
            ACTIVE[0] += 1 if now else -1


def set_autocast_dtype(device_type: str, dtype: DType) -> None:
    kind = _device_type(device_type)
    _state.dtype[kind] = _lower_dtype(dtype, kind)


def _per_device(device_type: str, kind: str, switch: bool) -> dict:
    """torch's older per-device autocast functions (is_autocast_cpu_enabled, ...): the
    device-type forms above with the device named (`kind`) in the function's name; the
    on/off pair only where `switch` (torch has none for "gpu")."""
    made = {
        f"get_autocast_{kind}_dtype": lambda: get_autocast_dtype(device_type),
        f"set_autocast_{kind}_dtype": lambda dtype: set_autocast_dtype(device_type, dtype),
    }
    if switch:
        made[f"is_autocast_{kind}_enabled"] = lambda: is_autocast_enabled(device_type)
        made[f"set_autocast_{kind}_enabled"] = lambda on: set_autocast_enabled(device_type, on)
    for name, fn in made.items():
        fn.__name__ = fn.__qualname__ = name
    return made


LEGACY = {**_per_device("cpu", "cpu", True), **_per_device("cuda", "gpu", False)}


def _lower_dtype(dtype, kind: str) -> DType:
    dtype = as_dtype(dtype)
    if dtype not in _LOWER_DTYPES:
        raise ValueError(
            f"In {kind} autocast, but the target dtype is not supported: {dtype}; autocast"
            " takes float16 or bfloat16"
        )
    return dtype


def signature() -> tuple:
    """This thread's autocast state as a compiled plan's key needs it (() when off)."""
    return tuple((k, _state.dtype[k]) for k, on in _state.enabled.items() if on)


class autocast:  # noqa: N801  (torch's name)
    """A block (or, as a decorator, a function) in which the tables' ops run at the
    autocast dtype (see the module)."""

    def __init__(
        self, device_type: str, dtype: DType | None = None, enabled: bool = True,
        cache_enabled: bool | None = None,
    ) -> None:  # fmt: skip
        self.device = _device_type(device_type)
        if not isinstance(enabled, bool):
            raise TypeError(f"autocast: enabled must be a bool, got {type(enabled).__name__}")
        self.fast_dtype = DEFAULT_DTYPES[self.device] if dtype is None else as_dtype(dtype)
        if self.fast_dtype not in _LOWER_DTYPES:
            user_warning.warn(
                f"In {self.device.upper()} autocast, but the target dtype is not supported."
                f" Disabling autocast.\n{self.device.upper()} Autocast only supports dtypes of"
                " kael.bfloat16, kael.float16 currently.",
                UserWarning,
            )
            enabled = False
        self._enabled = enabled
        self._saved: list[tuple[bool, DType]] = []

    def __enter__(self) -> autocast:
        self._saved.append((_state.enabled[self.device], _state.dtype[self.device]))
        if self._enabled:
            _state.dtype[self.device] = self.fast_dtype
        set_autocast_enabled(self.device, self._enabled)
        return self

    def __exit__(self, *exc) -> None:
        enabled, dtype = self._saved.pop()
        _state.dtype[self.device] = dtype
        set_autocast_enabled(self.device, enabled)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def within(*args, **kwargs):
            dtype = self.fast_dtype if self._enabled else None  # warned once, at creation
            with autocast(self.device, dtype, self._enabled):
                return fn(*args, **kwargs)

        return within


def for_device(device_type: str, default_dtype: DType) -> type:
    """torch.<device>.amp.autocast: autocast(enabled, dtype, cache_enabled) for one device
    type, with that device's default dtype (kael.cpu.amp, kael.cuda.amp)."""

    class DeviceAutocast(autocast):
        def __init__(self, enabled: bool = True, dtype=default_dtype, cache_enabled=True) -> None:
            super().__init__(device_type, dtype, enabled, cache_enabled)

    DeviceAutocast.__name__ = DeviceAutocast.__qualname__ = "autocast"
    return DeviceAutocast


def _cast(value, policies: dict[str, str]):
    """value with its eligible tensors cast by their device type's policy (lists and tuples
    of tensors too)."""
    if isinstance(value, Tensor):
        dtype = value.dtype
        if not dtype.is_floating_point or dtype is float64:
            return value
        kind = value.device.type
        policy = policies.get(kind)
        if policy is None or not _state.enabled.get(kind):
            return value
        target = _state.dtype[kind] if policy == LOWER else float32
        return value if dtype is target else value.to(target)
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return type(value)(_cast(v, policies) for v in value)
    return value


# id(fn) -> (fn, its wrapper): one wrapper per function, so a function published in two
# namespaces (kael.cross_entropy is kael.nn.functional.cross_entropy) stays one object
_wrappers: dict[int, tuple[Callable, Callable]] = {}


def wrap(fn: Callable, policies: dict[str, str]) -> Callable:
    """fn with its tensor arguments cast by their device type's policy (`policies`: "cpu"
    and/or "cuda" -> LOWER or FLOAT32) while autocast is on in this thread."""
    if getattr(fn, "_autocast", None) is not None:
        return fn
    known = _wrappers.get(id(fn))
    if known is not None:
        return known[1]

    @functools.wraps(fn)
    def op(*args, **kwargs):
        if not ACTIVE[0]:  # no thread has autocast on: one global read
            return fn(*args, **kwargs)
        enabled = _state.enabled
        if not (enabled["cpu"] or enabled["cuda"]):
            return fn(*args, **kwargs)
        if kwargs.get("out") is not None:  # torch's out= forms are not autocast
            return fn(*args, **kwargs)
        args = tuple(_cast(a, policies) for a in args)
        kwargs = {k: _cast(v, policies) for k, v in kwargs.items()}
        saved = dict(enabled)
        enabled["cpu"] = enabled["cuda"] = False  # inside, the op runs as its kernel would
        try:
            return fn(*args, **kwargs)
        finally:
            enabled.update(saved)

    op._autocast = policies
    _wrappers[id(fn)] = (fn, op)
    return op


def policies(table: str, name: str) -> dict[str, str]:
    """The op's policy per device type in a table (CPU's and CUDA's), empty where neither
    names it."""
    found = {"cpu": TABLES[table].get(name), "cuda": CUDA_TABLES[table].get(name)}
    return {kind: policy for kind, policy in found.items() if policy is not None}


# The namespaces whose CUDA-only ops (exp, sum, softmax, ... : in CUDA_TABLES but not in
# TABLES) are wrapped at the first autocast("cuda") rather than at import, so that programs
# that never use it keep those hot ops' calls free of the wrapper's frame.
_pending: list[tuple[object, str]] = []


def _swap(where, name: str, table: str) -> None:
    """Wrap where.name (a module's namespace dict, or a class's method) in place."""
    if isinstance(where, dict):
        if name in where:
            where[name] = wrap(where[name], policies(table, name))
    elif hasattr(where, name):
        setattr(where, name, wrap(getattr(where, name), policies(table, name)))


def install(namespace: dict | type, table: str) -> None:
    """Wrap the CPU table's ops found in a module's namespace (kael's, kael.nn.functional's,
    kael.linalg's) in place, each with its CUDA policy too; the CUDA-only ones later."""
    for name in TABLES[table]:
        _swap(namespace, name, table)
    _pending.append((namespace, table))


def install_methods(cls: type) -> None:
    """Wrap Tensor's methods named in the "Tensor" tables (the CUDA-only ones later)."""
    install(cls, "Tensor")


def _install_cuda_only() -> None:
    """Wrap the ops only CUDA's table names, in every installed namespace (once), and every
    other name the same function has there (kael.arccos is kael.acos), so that aliases stay
    one object."""
    with _count_lock:
        before = set(_wrappers)
        for where, table in _pending:
            for name in CUDA_TABLES[table]:
                if name not in TABLES[table]:
                    _swap(where, name, table)
        wrapped = {key: _wrappers[key][1] for key in set(_wrappers) - before}
        for where, _ in _pending:
            entries = where if isinstance(where, dict) else vars(where)
            for name, value in list(entries.items()):
                if id(value) in wrapped and _wrappers[id(value)][0] is value:
                    if isinstance(where, dict):
                        where[name] = wrapped[id(value)]
                    else:
                        setattr(where, name, wrapped[id(value)])
        _pending.clear()
