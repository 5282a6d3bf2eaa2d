"""Pooling modules, each a row over its kael.nn.functional form, with PyTorch's settings."""

from __future__ import annotations

from kael.nn import functional as F
from kael.nn.modules.declared import REQUIRED, declare
from kael.nn.modules.utils import ntuple
from kael.runtime.errors import ValueError


def _stride_defaults_to_kernel(module) -> None:
    if module.stride is None:
        module.stride = module.kernel_size


def _all_tuples(n: int, *names: str):
    def prepare(module) -> None:
        _stride_defaults_to_kernel(module)
        for name in names:
            setattr(module, name, ntuple(n, getattr(module, name)))

    return prepare


def _fractional(n: int):
    def prepare(module) -> None:
        name = type(module).__name__
        module.kernel_size = ntuple(n, module.kernel_size)
        size, ratio = module.output_size, module.output_ratio
        if size is None and ratio is None:
            raise ValueError(
                f"{name} requires specifying either an output size, or a pooling ratio"
            )
        if size is not None and ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        module.output_size = None if size is None else ntuple(n, size)
        module.output_ratio = None if ratio is None else ntuple(n, ratio)
        if ratio is not None and not all(0 < r < 1 for r in module.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {ratio})")
        module.register_buffer("_random_samples", module.__dict__.pop("_random_samples"))

    return prepare


MAX = (
    ("kernel_size", REQUIRED),
    ("stride", None),
    ("padding", 0),
    ("dilation", 1),
    ("return_indices", False),
    ("ceil_mode", False),
)
MAX_SHOWN = (
    "kernel_size={kernel_size}, stride={stride}, padding={padding}, dilation={dilation}, "
    "ceil_mode={ceil_mode}"
)
AVG = (("kernel_size", REQUIRED), ("stride", None), ("padding", 0), ("ceil_mode", False))
AVG_SHOWN = "kernel_size={kernel_size}, stride={stride}, padding={padding}"
UNPOOL = (("kernel_size", REQUIRED), ("stride", None), ("padding", 0))
LP = (("norm_type", REQUIRED), ("kernel_size", REQUIRED), ("stride", None), ("ceil_mode", False))
LP_SHOWN = (
    "norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, ceil_mode={ceil_mode}"
)
FRACTIONAL = (
    ("kernel_size", REQUIRED),
    ("output_size", None),
    ("output_ratio", None),
    ("return_indices", False),
    ("_random_samples", None),
)


def _unpool(fn):
    def unpool(input, indices, output_size=None, *, kernel_size, stride, padding):
        return fn(input, indices, kernel_size, stride, padding, output_size)

    return unpool


_prepare_max = dict(prepare=_stride_defaults_to_kernel)
MaxPool1d = declare("MaxPool1d", F.max_pool1d, MAX, MAX_SHOWN, **_prepare_max)
MaxPool2d = declare("MaxPool2d", F.max_pool2d, MAX, MAX_SHOWN, **_prepare_max)
MaxPool3d = declare("MaxPool3d", F.max_pool3d, MAX, MAX_SHOWN, **_prepare_max)
AvgPool1d = declare(
    "AvgPool1d",
    F.avg_pool1d,
    (*AVG, ("count_include_pad", True)),
    AVG_SHOWN,
    prepare=_all_tuples(1, "kernel_size", "stride", "padding"),
)
_AVG_ND = (*AVG, ("count_include_pad", True), ("divisor_override", None))
AvgPool2d = declare("AvgPool2d", F.avg_pool2d, _AVG_ND, AVG_SHOWN, **_prepare_max)
AvgPool3d = declare("AvgPool3d", F.avg_pool3d, _AVG_ND, AVG_SHOWN, **_prepare_max)
LPPool1d = declare("LPPool1d", F.lp_pool1d, LP, LP_SHOWN)
LPPool2d = declare("LPPool2d", F.lp_pool2d, LP, LP_SHOWN)
LPPool3d = declare("LPPool3d", F.lp_pool3d, LP, LP_SHOWN)
MaxUnpool1d, MaxUnpool2d, MaxUnpool3d = (
    declare(
        f"MaxUnpool{n}d",
        _unpool(fn),
        UNPOOL,
        "kernel_size={kernel_size}, stride={stride}, padding={padding}",
        prepare=_all_tuples(n, "kernel_size", "stride", "padding"),
    )
    for n, fn in ((1, F.max_unpool1d), (2, F.max_unpool2d), (3, F.max_unpool3d))
)
FractionalMaxPool2d = declare(
    "FractionalMaxPool2d", F.fractional_max_pool2d, FRACTIONAL, prepare=_fractional(2)
)
FractionalMaxPool3d = declare(
    "FractionalMaxPool3d", F.fractional_max_pool3d, FRACTIONAL, prepare=_fractional(3)
)


def _adaptive(kind: str, settings: tuple) -> tuple:
    """The 1-, 2- and 3-d forms of an adaptive pool (F.adaptive_{kind}_pool{n}d)."""
    return tuple(
        declare(
            f"Adaptive{kind.capitalize()}Pool{n}d",
            getattr(F, f"adaptive_{kind}_pool{n}d"),
            settings,
            "output_size={output_size}",
        )
        for n in (1, 2, 3)
    )


AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d = _adaptive(
    "max", (("output_size", REQUIRED), ("return_indices", False))
)
AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d = _adaptive(
    "avg", (("output_size", REQUIRED),)
)
