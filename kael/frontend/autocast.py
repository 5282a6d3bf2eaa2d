"""Autocast: within `with kael.autocast(device_type, dtype):` the ops PyTorch runs in lower
precision (matmuls, convolutions, attention, the recurrent layers) take their floating
inputs in `dtype`, and the ops it keeps in float32 (losses, pooling and padding of volumes,
linear algebra, quantile, cdist, ...) take float16/bfloat16 inputs as float32. The rest
run as they are. The tables are PyTorch's CPU tables, used for cuda tensors too (PyTorch's
CUDA tables also keep exp, log, softmax, sum and the norms in float32: not yet here);
the default dtype is bfloat16 on the CPU and float16 on CUDA; float64 is never cast.

The state is per thread, as PyTorch's. Each op named in a table is wrapped once where it
is published (kael.NAME, kael.nn.functional.NAME, kael.linalg.NAME, Tensor.NAME); while no
thread has autocast on, a wrapper costs one global read. Under kael.compile the casts are
ops of the trace, and the autocast state is part of a plan's signature.
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable

from kael.frontend.tensor import Tensor
from kael.runtime import sync
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
_LINALG = ("cholesky", "cholesky_ex", "inv", "inv_ex", "solve", "solve_ex", "lstsq", "qr",
           "svd", "svdvals", "eigh", "eigvalsh", "pinv", "matrix_exp", "det", "slogdet",
           "lu_factor", "lu", "lu_solve", "householder_product")  # fmt: skip

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
    "recurrent": dict.fromkeys(_RECURRENT, LOWER),
    "Tensor": {
        **dict.fromkeys(
            (
                "matmul",
                "mm",
                "bmm",
                "addmm",
                "baddbmm",
                "addbmm",
                "__matmul__",
                "__rmatmul__",
                "prelu",
            ),
            LOWER,
        ),  # fmt: skip
        **dict.fromkeys(
            ("prod", "quantile", "nanquantile", "trace", "inverse", "pinverse", "cholesky"), FLOAT32
        ),  # fmt: skip
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
_count_lock = sync.lock()


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
    was = any(_state.enabled.values())
    _state.enabled[kind] = bool(enabled)
    now = any(_state.enabled.values())
    if was != now:
        with _count_lock:
            ACTIVE[0] += 1 if now else -1


def set_autocast_dtype(device_type: str, dtype: DType) -> None:
    kind = _device_type(device_type)
    _state.dtype[kind] = _lower_dtype(dtype, kind)


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
            warnings.warn(
                f"In {self.device.upper()} autocast, but the target dtype is not supported."
                f" Disabling autocast.\n{self.device.upper()} Autocast only supports dtypes of"
                " kael.bfloat16, kael.float16 currently.",
                UserWarning,
                stacklevel=2,
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


def _cast(value, policy: str):
    """value with its eligible tensors cast (lists and tuples of tensors too)."""
    if isinstance(value, Tensor):
        dtype = value.dtype
        if not dtype.is_floating_point or dtype is float64:
            return value
        kind = value.device.type
        if not _state.enabled.get(kind):
            return value
        target = _state.dtype[kind] if policy == LOWER else float32
        return value if dtype is target else value.to(target)
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return type(value)(_cast(v, policy) for v in value)
    return value


# id(fn) -> (fn, its wrapper): one wrapper per function, so a function published in two
# namespaces (kael.cross_entropy is kael.nn.functional.cross_entropy) stays one object
_wrappers: dict[int, tuple[Callable, Callable]] = {}


def wrap(fn: Callable, policy: str) -> Callable:
    """fn with its tensor arguments cast by `policy` while autocast is on in this thread."""
    if getattr(fn, "_autocast", None) is not None:
        return fn
    known = _wrappers.get(id(fn))
    if known is not None:
        return known[1]

    @functools.wraps(fn)
    def op(*args, **kwargs):
        enabled = _state.enabled
        if not ACTIVE[0] or not (enabled["cpu"] or enabled["cuda"]):
            return fn(*args, **kwargs)
        if kwargs.get("out") is not None:  # torch's out= forms are not autocast
            return fn(*args, **kwargs)
        args = tuple(_cast(a, policy) for a in args)
        kwargs = {k: _cast(v, policy) for k, v in kwargs.items()}
        saved = dict(enabled)
        enabled["cpu"] = enabled["cuda"] = False  # inside, the op runs as its kernel would
        try:
            return fn(*args, **kwargs)
        finally:
            enabled.update(saved)

    op._autocast = policy
    _wrappers[id(fn)] = (fn, op)
    return op


def install(namespace: dict, table: str) -> None:
    """Wrap the table's ops found in a module's namespace (kael's, kael.nn.functional's,
    kael.linalg's) in place."""
    for name, policy in TABLES[table].items():
        if name in namespace:
            namespace[name] = wrap(namespace[name], policy)


def install_methods(cls: type) -> None:
    """Wrap Tensor's methods named in the "Tensor" table."""
    for name, policy in TABLES["Tensor"].items():
        if hasattr(cls, name):
            setattr(cls, name, wrap(getattr(cls, name), policy))
