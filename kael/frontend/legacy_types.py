"""torch's legacy tensor types: kael.FloatTensor([1, 2]), kael.LongTensor(3),
isinstance(x, kael.FloatTensor), x.type(kael.DoubleTensor). Each is a class whose call is
the legacy constructor in its dtype (tensor.legacy_new) and whose instances are the CPU
tensors of that dtype."""

from __future__ import annotations

from kael.frontend.tensor import Tensor, legacy_new
from kael.runtime import dtypes
from kael.runtime.device import CPU


class LegacyType(type):
    """The metaclass of kael.FloatTensor and the rest (see the module)."""

    legacy_dtype: dtypes.DType

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.legacy_dtype and obj.device is CPU

    def __call__(cls, *args, device=None) -> Tensor:
        return legacy_new(cls.legacy_dtype, CPU, args, device, cls.__name__)

    def __repr__(cls) -> str:
        return f"<class 'kael.{cls.__name__}'>"


NAMES = {
    "FloatTensor": dtypes.float32, "DoubleTensor": dtypes.float64, "HalfTensor": dtypes.float16,
    "BFloat16Tensor": dtypes.bfloat16, "ByteTensor": dtypes.uint8, "CharTensor": dtypes.int8,
    "ShortTensor": dtypes.int16, "IntTensor": dtypes.int32, "LongTensor": dtypes.int64,
    "BoolTensor": dtypes.bool_,
}  # fmt: skip

TYPES: dict[str, LegacyType] = {
    name: LegacyType(name, (), {"legacy_dtype": dtype, "__module__": "kael"})
    for name, dtype in NAMES.items()
}
