"""kael: a tensor library with a PyTorch-shaped eager API whose every computation is compiled."""

import math as _math

from kael import (
    amp,
    backends,
    compiler,
    cpu,
    cuda,
    fft,
    func,
    jit,
    linalg,
    multiprocessing,
    nn,
    profiler,
    random,
    serialization,
    signal,
    special,
    testing,
    utils,
    version,
)
from kael.frontend import autocast as _autocast
from kael.frontend import complex as _complex
from kael.frontend import conveniences as _conveniences
from kael.frontend import factories as _factories
from kael.frontend import legacy_types as _legacy_types
from kael.frontend import lowrank as _lowrank
from kael.frontend import ops as _ops
from kael.frontend import out_forms as _out_forms
from kael.frontend import published as _published
from kael.frontend import random as _random
from kael.frontend import recurrent as _recurrent
from kael.frontend import rejection as _rejection
from kael.frontend import serialization as _serialization
from kael.frontend import stft as _stft
from kael.frontend import torch_level as _torch_level
from kael.frontend.autocast import (
    autocast,
    get_autocast_dtype,
    is_autocast_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from kael.frontend.compiled import compile
from kael.frontend.factories import (
    Size,
    arange,
    as_tensor,
    bartlett_window,
    blackman_window,
    broadcast_shapes,
    can_cast,
    empty,
    empty_like,
    empty_strided,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    hamming_window,
    hann_window,
    is_tensor,
    kaiser_window,
    linspace,
    logspace,
    numel,
    ones,
    ones_like,
    scalar_tensor,
    tensor,
    zeros,
    zeros_like,
)
from kael.frontend.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from kael.frontend.inspection import explain
from kael.frontend.memory_formats import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    memory_format,
    preserve_format,
)
from kael.frontend.storages import UntypedStorage
from kael.frontend.tensor import Tensor
from kael.frontend.tracing import op_door as _op_door
from kael.func import vmap
from kael.random import (  # kael.random holds torch.random's names; kael has them too
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from kael.runtime.allocator import empty_cache, memory_stats
from kael.runtime.debug import set_debug
from kael.runtime.determinism import (
    are_deterministic_algorithms_enabled,
    is_deterministic_algorithms_warn_only_enabled,
    use_deterministic_algorithms,
)
from kael.runtime.device import Device as device
from kael.runtime.dtypes import DType as dtype
from kael.runtime.dtypes import (
    bfloat16,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    result_type,
    set_default_dtype,
    uint8,
)
from kael.runtime.dtypes import bool_ as bool
from kael.runtime.dtypes import complex64 as cfloat
from kael.runtime.dtypes import complex128 as cdouble
from kael.runtime.dtypes import float16 as half
from kael.runtime.dtypes import float32 as float
from kael.runtime.dtypes import float64 as double
from kael.runtime.dtypes import int16 as short
from kael.runtime.dtypes import int32 as int
from kael.runtime.dtypes import int64 as long
from kael.runtime.errors import (
    AttributeError,
    Error,
    IndexError,
    KeyError,
    NotImplementedError,
    OutOfMemoryError,
    TypeError,
    ValueError,
)
from kael.runtime.threadpool import get_num_threads, set_num_threads
from kael.runtime.typeinfo import finfo, iinfo
from kael.runtime.version import __version__

globals().update(_ops.FUNCTIONS)
_SAMPLERS = ("bernoulli", "multinomial", "rand", "rand_like", "randint", "randn", "randn_like")
_SAMPLERS += ("normal", "randint_like")
globals().update({name: _op_door(name, getattr(_random, name)) for name in _SAMPLERS})
_REJECTION = ("binomial", "poisson", "_sample_dirichlet", "_standard_gamma")
globals().update({name: _op_door(name, getattr(_rejection, name)) for name in _REJECTION})
randperm = _op_door("randperm", _random.randperm)
save, load = _serialization.FUNCTIONS["save"], _serialization.FUNCTIONS["load"]
# Functions of tensors that torch.Tensor has no method for (or has as a method already).
globals().update({name: _op_door(name, fn) for name, fn in _complex.FUNCTIONS.items()})
globals().update({name: _op_door(name, fn) for name, fn in _stft.FUNCTIONS.items()})
for _name, _fn in _stft.FUNCTIONS.items():  # x.stft(...) as torch.stft(x, ...)
    setattr(Tensor, _name, _op_door(f"Tensor.{_name}", _fn))
_TENSOR_UTILITIES = ("clone", "detach", "rsub", "unravel_index")
globals().update({name: _op_door(name, getattr(_factories, name)) for name in _TENSOR_UTILITIES})
concat = concatenate = _ops.FUNCTIONS["cat"]  # torch's other names for cat (no Tensor method)

__all__ = [
    "Size",
    "bartlett_window",
    "blackman_window",
    "broadcast_shapes",
    "can_cast",
    "clone",
    "concat",
    "concatenate",
    "detach",
    "empty_strided",
    "get_rng_state",
    "hamming_window",
    "hann_window",
    "is_tensor",
    "kaiser_window",
    "logspace",
    "normal",
    "numel",
    "poisson",
    "randint_like",
    "rsub",
    "seed",
    "set_rng_state",
    "unravel_index",
    "randperm",
    "save",
    "load",
    "randn_like",
    "randn",
    "randint",
    "rand_like",
    "rand",
    "multinomial",
    "manual_seed",
    "Generator",
    "default_generator",
    "initial_seed",
    "vmap",
    "bernoulli",
    *_complex.FUNCTIONS,
    *_stft.FUNCTIONS,
    "binomial",
    *_ops.FUNCTIONS,
    "AttributeError",
    "Error",
    "IndexError",
    "KeyError",
    "NotImplementedError",
    "OutOfMemoryError",
    "Tensor",
    "TypeError",
    "UntypedStorage",
    "ValueError",
    "__version__",
    "arange",
    "as_tensor",
    "bool",
    "compile",
    "cuda",
    "distributions",
    "fft",
    "profiler",
    "linalg",
    "multiprocessing",
    "nn",
    "serialization",
    "signal",
    "special",
    "testing",
    "amp",
    "compiler",
    "cpu",
    "func",
    "jit",
    "autocast",
    "get_autocast_dtype",
    "is_autocast_enabled",
    "set_autocast_dtype",
    "set_autocast_enabled",
    "backends",
    "random",
    "utils",
    "version",
    "dtype",
    "device",
    "memory_format",
    "contiguous_format",
    "preserve_format",
    "channels_last",
    "channels_last_3d",
    "empty",
    "empty_cache",
    "empty_like",
    "explain",
    "eye",
    "finfo",
    "iinfo",
    "bfloat16",
    "cdouble",
    "cfloat",
    "complex64",
    "complex128",
    "double",
    "float",
    "float16",
    "float32",
    "float64",
    "half",
    "from_dlpack",
    "from_numpy",
    "full",
    "full_like",
    "get_num_threads",
    "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled",
    "use_deterministic_algorithms",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "long",
    "short",
    "uint8",
    "linspace",
    "memory_stats",
    "ones",
    "ones_like",
    "promote_types",
    "result_type",
    "scalar_tensor",
    "set_debug",
    "set_num_threads",
    "tensor",
    "zeros",
    "zeros_like",
    "enable_grad",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "no_grad",
    "set_grad_enabled",
    "get_default_dtype",
    "set_default_dtype",
]

# torch.nn.functional's functions that PyTorch also has as torch.NAME with the same
# signature (torch.conv2d, torch.selu_, ...); the losses and norms are not among them
# (torch's own spellings take other arguments).
_TORCH_LEVEL_FUNCTIONAL = (
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "adaptive_avg_pool1d", "selu",
    "celu", "threshold", "hardshrink", "pixel_shuffle", "pixel_unshuffle",
    "cosine_similarity", "pairwise_distance", "bilinear", "prelu", "rms_norm", "selu_",
    "celu_", "threshold_", "relu_",
)  # fmt: skip
globals().update({name: getattr(nn.functional, name) for name in _TORCH_LEVEL_FUNCTIONAL})
__all__ += list(_TORCH_LEVEL_FUNCTIONAL)
for _name in ("hardshrink", "prelu", "relu_"):  # Tensor.hardshrink(), Tensor.prelu(w), ...
    setattr(Tensor, _name, getattr(nn.functional, _name))

# torch.NAME forms with torch's own signatures (torch_level.py, recurrent.py) and
# utilities (conveniences.py); they come last, so a name there never hides an op family's.
_EXTRA = {**_torch_level.FUNCTIONS, **_conveniences.FUNCTIONS, **_recurrent.FUNCTIONS}
_EXTRA.update(_lowrank.FUNCTIONS)
_EXTRA.update(_autocast.LEGACY)
_EXTRA["to_dlpack"] = utils.dlpack.to_dlpack
globals().update({name: fn for name, fn in _EXTRA.items() if name not in globals()})
__all__ += [name for name in _EXTRA if name not in __all__]
for _name, _method in _conveniences.METHODS.items():
    setattr(Tensor, _name, _method)
globals().update(
    {name: _factories.on_default_device(globals()[name]) for name in _factories.ON_DEFAULT_DEVICE}
)
globals().update(
    {
        name: _factories.on_default_device(globals()[name], default=False)
        for name in _factories.TAKES_CREATION_KEYWORDS
    }
)
for _name in _factories.NEW_METHODS:  # Tensor.new_zeros(..., requires_grad=False) ...
    setattr(Tensor, _name, _factories.on_default_device(getattr(Tensor, _name), default=False))

_out_forms.install(globals())  # out= for kael.cat, kael.zeros, ... (torch takes it)
_autocast.install(globals(), "kael")  # matmul, conv2d, quantile, ... under kael.autocast
_autocast.install_methods(Tensor)
for _alias, _base in special._ALIASES.items():  # kael.special's aliases: kael's ops, out= too
    setattr(special, _alias, globals()[_base])

# kael.distributions reads kael.nn at import: it comes once the namespace is whole.
from kael import distributions  # noqa: E402

# torch's constants and legacy tensor types (kael.FloatTensor, ...)
inf, nan, pi, e, newaxis = _math.inf, _math.nan, _math.pi, _math.e, None
globals().update(_legacy_types.TYPES)
__all__ += ["inf", "nan", "pi", "e", "newaxis", *_legacy_types.TYPES]

# Ops are pickled by reference: each is named where it is published here.
_published.publish(__name__, globals())

# The implementation's packages stay importable (kael.runtime.dtypes, ...) but are not part
# of the public namespace; importing their modules bound them here.
del codegen, frontend, ir, runtime  # noqa: F821
