"""kael.save and kael.load: PyTorch's checkpoint format (torch.save's zip archive since 1.6),
read and written with the standard library, so torch checkpoints load into kael and back.

The archive's one top folder holds data.pkl (the object, pickled with each storage as a
persistent id), data/<key> (each storage's little-endian bytes, aligned to 64 bytes),
.format_version, .storage_alignment, byteorder, version and .data/serialization_id.
"""

from __future__ import annotations

import _compat_pickle
import codecs
import collections
import io
import mmap as _mmap
import os
import pickle
import secrets
import struct
import sys
import zipfile
import zlib
from collections.abc import Callable

import numpy as np

from kael.frontend import interop
from kael.frontend.factories import Size
from kael.frontend.tensor import Tensor, empty_impl, transfer_impl
from kael.frontend.tracing import op_door
from kael.runtime import dtypes
from kael.runtime.device import CPU, CUDA, Device, cuda_is_available, parse_device
from kael.runtime.errors import Error, TypeError, ValueError
from kael.runtime.tensor_impl import TensorImpl

# kael's dtypes with torch's names for them and for their legacy typed storage classes.
_TORCH_NAMES = {
    dtypes.float32: ("float32", "FloatStorage"),
    dtypes.float64: ("float64", "DoubleStorage"),
    dtypes.float16: ("float16", "HalfStorage"),
    dtypes.bfloat16: ("bfloat16", "BFloat16Storage"),
    dtypes.int64: ("int64", "LongStorage"),
    dtypes.int32: ("int32", "IntStorage"),
    dtypes.int16: ("int16", "ShortStorage"),
    dtypes.int8: ("int8", "CharStorage"),
    dtypes.uint8: ("uint8", "ByteStorage"),
    dtypes.bool_: ("bool", "BoolStorage"),
}
# torch's storage classes and dtypes that kael has no dtype for: refused, naming the dtype.
_FOREIGN_STORAGES = {
    "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
    "QInt8Storage": "qint8",
    "QUInt8Storage": "quint8",
    "QInt32Storage": "qint32",
    "QUInt4x2Storage": "quint4x2",
    "QUInt2x4Storage": "quint2x4",
}
_FOREIGN_DTYPES = (
    *_FOREIGN_STORAGES.values(),
    "complex32",
    "uint16",
    "uint32",
    "uint64",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
)
_ALIGNMENT = 64  # torch's config.save.storage_alignment: every record's bytes start here
_FORMAT_VERSION = "3\n"  # the `version` record torch 2.13 writes
_PADDING_FIELD = 0x4246  # "FB": the zip extra field torch's writer pads headers with
_MMAP_NEEDS_PATH = "f must be a file path in order to use the mmap argument"
# torch.save(..., _use_new_zipfile_serialization=False) begins with this number, pickled.
_LEGACY_MAGIC = b"\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"
_PICKLE_LOAD_ARGS = ("encoding", "errors", "fix_imports")


# ---- loading ------------------------------------------------------------------------------


class _StorageType:
    """What a torch.<Type>Storage global unpickles to: the dtype of its elements."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: dtypes.DType) -> None:
        self.dtype = dtype


class _LoadedStorage:
    """One storage of the file, read once and placed: every tensor over it is a view of it."""

    __slots__ = ("storage", "dtype")

    def __init__(self, storage, dtype: dtypes.DType) -> None:
        self.storage = storage
        self.dtype = dtype


_TENSOR_TYPE = object()  # torch.Tensor and nn.Parameter, as _rebuild_from_type_v2's new_type


def _tensor_over(stored: _LoadedStorage, offset: int, size, stride, dtype) -> Tensor:
    """A kael tensor viewing the loaded storage (validated against its bytes)."""
    if not isinstance(stored, _LoadedStorage):
        raise Error(f"a tensor in the checkpoint has no storage, got {type(stored).__name__}")
    storage = stored.storage
    return Tensor(TensorImpl(storage, tuple(size), tuple(stride), offset, dtype, storage.device))


def _rebuild_tensor(storage, storage_offset, size, stride) -> Tensor:
    """torch._utils._rebuild_tensor: a view of a typed storage."""
    return _tensor_over(storage, storage_offset, size, stride, storage.dtype)


def _check_metadata(metadata) -> None:
    """Refuse conj/neg bits: kael tensors carry none."""
    if metadata:
        raise Error(f"kael tensors have no conj or neg bits: cannot load metadata {metadata}")


def _rebuild_tensor_v2(
    storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None
) -> Tensor:
    """torch._utils._rebuild_tensor_v2 (requires_grad and hooks dropped: kael has no autograd)."""
    _check_metadata(metadata)
    return _rebuild_tensor(storage, storage_offset, size, stride)


def _rebuild_tensor_v3(
    storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None
) -> Tensor:
    """torch._utils._rebuild_tensor_v3: an untyped storage viewed as `dtype`."""
    _check_metadata(metadata)
    return _tensor_over(storage, storage_offset, size, stride, dtype)


def _rebuild_parameter(data, requires_grad, backward_hooks) -> Tensor:
    """torch._utils._rebuild_parameter: an nn.Parameter loads as its plain tensor."""
    return data


def _rebuild_qtensor(*args) -> Tensor:
    """torch._utils._rebuild_qtensor: refused (its storage's dtype is named before this runs)."""
    raise TypeError("kael has no quantized tensors: cannot load torch._utils._rebuild_qtensor")


def _rebuild_from_type_v2(func, new_type, args, state) -> Tensor:
    """torch._tensor._rebuild_from_type_v2: the tensor `func` rebuilds (Tensor or Parameter)."""
    if new_type is not _TENSOR_TYPE:
        raise Error(f"kael cannot load a tensor subclass {new_type!r}")
    return func(*args)


def _torch_table() -> dict[tuple[str, str], object]:
    """The torch globals a plain checkpoint uses, as kael's equivalents."""
    table = {
        ("torch", "Size"): Size,
        ("torch", "device"): Device,
        ("torch", "Tensor"): _TENSOR_TYPE,
        ("torch.nn.parameter", "Parameter"): _TENSOR_TYPE,
        ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_qtensor"): _rebuild_qtensor,
        ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
        ("torch", "UntypedStorage"): _StorageType(dtypes.uint8),
        ("torch.storage", "UntypedStorage"): _StorageType(dtypes.uint8),
    }
    for dtype, (name, storage) in _TORCH_NAMES.items():
        table["torch", name] = dtype
        table["torch", storage] = _StorageType(dtype)
    return table


_TORCH_GLOBALS = _torch_table()
# What torch's weights_only unpickler allows besides torch's own names.
_SAFE_GLOBALS = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "Counter"): collections.Counter,
    ("_codecs", "encode"): codecs.encode,  # bytes, pickled with protocol 2
    ("builtins", "set"): set,
    ("builtins", "bytearray"): bytearray,
    ("builtins", "complex"): complex,
    **_TORCH_GLOBALS,
}


def _python3_name(module: str, name: str) -> tuple[str, str]:
    """A protocol-2 pickle's Python 2 name (__builtin__.set) as Python 3 spells it."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[module, name]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def _refuse_foreign_torch(module: str, name: str) -> None:
    """A typed error for torch's complex, quantized and other dtypes kael lacks."""
    if module in ("torch", "torch.storage"):
        dtype = _FOREIGN_STORAGES.get(name, name)
        if dtype in _FOREIGN_DTYPES:
            raise TypeError(f"kael has no dtype torch.{dtype}: cannot load {module}.{name}")


def _unsupported_global(module: str, name: str) -> Error:
    """torch's weights_only refusal, naming the global."""
    return Error(
        "Weights only load failed. Unsupported global: GLOBAL"
        f" {module}.{name} was not an allowed global by default. Load with"
        " weights_only=False only if you trust the source of the checkpoint."
    )


class _CheckpointUnpickler(pickle.Unpickler):
    """data.pkl's unpickler: storages from the archive, torch's globals as kael's."""

    def __init__(self, file, load_storage: Callable, weights_only: bool, **kwargs) -> None:
        super().__init__(file, **kwargs)
        self._load_storage = load_storage
        self._weights_only = weights_only

    def find_class(self, module: str, name: str):
        module, name = _python3_name(module, name)
        found = _SAFE_GLOBALS.get((module, name))
        if found is not None:
            return found
        _refuse_foreign_torch(module, name)
        if self._weights_only:
            raise _unsupported_global(module, name)
        if module == "torch" or module.startswith("torch."):
            raise Error(f"kael cannot load the global {module}.{name}: kael has no equivalent")
        return super().find_class(module, name)

    def persistent_load(self, saved_id) -> _LoadedStorage:
        if not isinstance(saved_id, tuple) or len(saved_id) != 5 or saved_id[0] != "storage":
            raise Error(f"unknown persistent id in the checkpoint: {saved_id!r}")
        _, storage_type, key, location, numel = saved_id
        if not isinstance(storage_type, _StorageType):
            raise Error(f"unknown storage type in the checkpoint: {storage_type!r}")
        return self._load_storage(storage_type.dtype, str(key), str(location), numel)


class _Archive:
    """The records of one checkpoint's zip archive, under its top folder."""

    def __init__(self, zf: zipfile.ZipFile, mapped: _mmap.mmap | None) -> None:
        names = zf.namelist()
        if not names:
            raise Error("not a torch.save checkpoint: the zip archive is empty")
        self.zf = zf
        self.mapped = mapped
        self.prefix = names[0].split("/", 1)[0] + "/"
        if self.has("constants.pkl"):
            raise Error("kael.load cannot load TorchScript archives (torch.jit.save)")
        if not self.has("data.pkl"):
            raise Error(f"not a torch.save checkpoint: no record {self.prefix}data.pkl")

    def has(self, name: str) -> bool:
        return self.prefix + name in self.zf.NameToInfo

    def read(self, name: str, default: bytes | None = None) -> bytes:
        if default is not None and not self.has(name):
            return default
        return self.zf.read(self.info(name))

    def info(self, name: str) -> zipfile.ZipInfo:
        """A record's entry; kael.Error naming it when the archive lacks it."""
        try:
            return self.zf.getinfo(self.prefix + name)
        except KeyError:
            raise Error(f"the checkpoint has no record {self.prefix}{name}") from None

    def storage_bytes(self, name: str, nbytes: int) -> Tensor:
        """A record's bytes as a host uint8 tensor: read into new memory, or mapped."""
        info = self.info(name)
        if info.file_size != nbytes or info.compress_type != zipfile.ZIP_STORED:
            raise Error(
                f"checkpoint record {info.filename} holds {info.file_size} bytes"
                f" (compression {info.compress_type}), its storage needs {nbytes} stored bytes"
            )
        if self.mapped is not None:
            start = _data_offset(self.mapped, info)
            array = np.frombuffer(self.mapped, np.uint8, nbytes, start)
            return Tensor(interop.from_numpy_impl(array))
        raw = Tensor(empty_impl((nbytes,), dtypes.uint8, CPU))
        with self.zf.open(info) as src:
            src.readinto(memoryview(raw.numpy()))
        return raw


def _data_offset(mapped: _mmap.mmap, info: zipfile.ZipInfo) -> int:
    """Where a stored record's bytes begin: past its local header's name and extra field."""
    header = info.header_offset
    name_length, extra_length = struct.unpack_from("<HH", mapped, header + 26)
    return header + 30 + name_length + extra_length


def _byteorder(archive: _Archive) -> str:
    """The byteorder record ("little" when absent, as torch reads it)."""
    order = archive.read("byteorder", b"little").decode("ascii", "replace")
    if order not in ("little", "big"):
        raise ValueError(f"Unknown endianness type: {order}")
    return order


def _swap_bytes(raw: Tensor, itemsize: int) -> None:
    """Turn the file's big-endian elements into this machine's order, in place (I/O decoding)."""
    if itemsize > 1:
        raw.numpy().view(f"u{itemsize}").byteswap(inplace=True)


def _restore_location(map_location) -> Callable[[Tensor, str], Tensor]:
    """torch.load's map_location forms as one function: (host bytes, saved location) ->
    the bytes where they belong."""
    if map_location is None:
        return _to_location
    if isinstance(map_location, (str, Device)):
        return lambda raw, location: _to_location(raw, str(map_location))
    if isinstance(map_location, dict):
        return lambda raw, location: _to_location(raw, map_location.get(location, location))
    if callable(map_location):
        return lambda raw, location: _called_location(map_location, raw, location)
    raise TypeError(
        "map_location must be None, a string, a kael.device, a dict or a callable, got"
        f" {type(map_location).__name__}"
    )


def _to_location(raw: Tensor, location) -> Tensor:
    """The bytes on the device named (torch's default_restore_location)."""
    device = parse_device(str(location) if isinstance(location, Device) else location)
    if device is CUDA and not cuda_is_available():
        raise Error(
            "Attempting to deserialize object on a CUDA device but kael.cuda.is_available() is"
            " False. If you are running on a CPU-only machine, please use kael.load with"
            " map_location='cpu' to map your storages to the CPU."
        )
    return raw.to(device)


def _called_location(map_location: Callable, raw: Tensor, location: str) -> Tensor:
    """A callable map_location, given the bytes as a host uint8 tensor and the saved location:
    it returns them placed (raw.cuda(), raw itself), or None for the default place."""
    placed = map_location(raw, location)
    if placed is None:
        return _to_location(raw, location)
    if not isinstance(placed, Tensor):
        raise TypeError(
            "a map_location callable must return the storage it was given (a kael.Tensor) or"
            f" None, got {type(placed).__name__}"
        )
    return placed


def _storage_loader(archive: _Archive, map_location) -> Callable:
    """persistent_load's reader: each key's bytes read, byte-swapped and placed once."""
    restore = _restore_location(map_location)
    big_endian = _byteorder(archive) != sys.byteorder
    loaded: dict[str, _LoadedStorage] = {}

    def load_storage(dtype: dtypes.DType, key: str, location: str, numel) -> _LoadedStorage:
        found = loaded.get(key)
        if found is None:
            raw = archive.storage_bytes(f"data/{key}", numel * dtype.itemsize)
            if big_endian:
                _swap_bytes(raw, dtype.itemsize)
            placed = restore(raw, location)
            found = loaded[key] = _LoadedStorage(placed._impl.storage, dtype)
        return found

    return load_storage


def _legacy_kind(head: bytes) -> str | None:
    """The name of torch's pre-1.6 format the file's first bytes show, or None."""
    if head[:1] == b"\x80" and head[2:14] == _LEGACY_MAGIC:
        return "legacy (pre-1.6, non-zip) torch.save format"
    if head[257:262] == b"ustar":
        return "legacy tar torch.save format"
    return None


def _open_archive(opened, mapped) -> _Archive:
    """The checkpoint's archive; a typed error for torch's legacy formats and non-zip input."""
    start = opened.tell()
    head = opened.read(512)
    opened.seek(start)
    legacy = _legacy_kind(head)
    if legacy is not None:
        raise Error(
            f"kael.load does not support the {legacy}; load it with torch.load and save it"
            " again with torch.save (zip format, the default since PyTorch 1.6)"
        )
    try:
        return _Archive(zipfile.ZipFile(opened), mapped)
    except zipfile.BadZipFile as error:
        raise Error(
            f"failed reading the checkpoint as a zip archive ({error}): it is truncated,"
            " corrupt or not a torch.save file"
        ) from None


def _load_archive(opened, mapped, map_location, weights_only: bool, pickle_args) -> object:
    """Unpickle data.pkl, reading the storages it names; foreign failures as kael.Error."""
    try:
        archive = _open_archive(opened, mapped)
        unpickler = _CheckpointUnpickler(
            io.BytesIO(archive.read("data.pkl")),
            _storage_loader(archive, map_location),
            weights_only,
            **pickle_args,
        )
        return unpickler.load()
    except Error:
        raise
    except Exception as error:  # a corrupt record or pickle
        raise Error(
            f"failed to load the checkpoint, it is corrupt: {type(error).__name__}: {error}"
        ) from None


def _pickle_load_args(pickle_load_args: dict) -> dict:
    """The unpickler's keywords torch.load passes on (encoding "utf-8" by default)."""
    unknown = sorted(set(pickle_load_args) - set(_PICKLE_LOAD_ARGS))
    if unknown:
        raise TypeError(f"load() got unexpected keyword arguments {unknown}")
    return {"encoding": "utf-8", **pickle_load_args}


def _is_path(f) -> bool:
    return isinstance(f, (str, os.PathLike))


def _map_file(opened) -> _mmap.mmap:
    """The whole file mapped copy-on-write (writes stay in memory, as torch's MAP_PRIVATE)."""
    return _mmap.mmap(opened.fileno(), 0, access=_mmap.ACCESS_COPY)


def load(
    f,
    map_location=None,
    pickle_module=None,
    *,
    weights_only: bool = True,
    mmap=None,
    **pickle_load_args,
) -> object:
    """torch.load: the object a torch.save (or kael.save) checkpoint holds, its tensors as
    kael tensors; storages shared in the file stay shared. `weights_only` (the default)
    refuses every global but tensors, containers, numbers, strings, dtypes and torch.Size."""
    if pickle_module is not None and pickle_module is not pickle:
        raise TypeError("kael.load unpickles with the pickle module only")
    if not isinstance(weights_only, bool):
        raise TypeError(f"weights_only must be a bool, got {type(weights_only).__name__}")
    args = _pickle_load_args(pickle_load_args)
    if mmap and not _is_path(f):
        raise ValueError(_MMAP_NEEDS_PATH)
    if _is_path(f):
        with open(f, "rb") as opened:
            mapped = _map_file(opened) if mmap else None
            return _load_archive(opened, mapped, map_location, weights_only, args)
    if not hasattr(f, "read"):
        raise TypeError(f"f must be a path or a binary file object, got {type(f).__name__}")
    opened = f if f.seekable() else io.BytesIO(f.read())
    return _load_archive(opened, None, map_location, weights_only, args)


# ---- saving -------------------------------------------------------------------------------


class _Global:
    """A torch global as torch's unpickler reads it: written as GLOBAL `module name`."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def __call__(self, *args):  # pickle's save_reduce wants a callable; torch's is elsewhere
        raise Error(f"{self.module}.{self.name} exists in torch only")


_REBUILD_V2 = _Global("torch._utils", "_rebuild_tensor_v2")
_SIZE = _Global("torch", "Size")
_DEVICE = _Global("torch", "device")
_DTYPE_GLOBALS = {dtype: _Global("torch", names[0]) for dtype, names in _TORCH_NAMES.items()}
_STORAGE_GLOBALS = {dtype: _Global("torch", names[1]) for dtype, names in _TORCH_NAMES.items()}


class _StorageRef:
    """A tensor's storage while pickling: persistent_id turns it into torch's storage id."""

    __slots__ = ("impl",)

    def __init__(self, impl: TensorImpl) -> None:
        self.impl = impl


class _SavedStorages:
    """The storages a checkpoint writes, keyed "0", "1", ... in the order tensors reach them."""

    def __init__(self) -> None:
        self.entries: dict[int, tuple[str, object, dtypes.DType]] = {}

    def persistent_id(self, impl: TensorImpl) -> tuple:
        """torch's ("storage", <Type>Storage, key, location, numel) for impl's storage."""
        storage = impl.storage
        entry = self.entries.setdefault(id(storage), (str(len(self.entries)), storage, impl.dtype))
        key, _, dtype = entry
        if dtype is not impl.dtype:
            raise Error(
                "Cannot save multiple tensors or storages that view the same data as different"
                f" types ({dtype} and {impl.dtype})"
            )
        location = "cpu" if storage.device is CPU else "cuda:0"
        return ("storage", _STORAGE_GLOBALS[dtype], key, location, storage.nbytes // dtype.itemsize)

    def records(self):
        """(record name, host bytes) for each storage, the whole storage as torch writes it."""
        for key, storage, dtype in self.entries.values():
            nbytes = storage.nbytes // dtype.itemsize * dtype.itemsize
            impl = TensorImpl(storage, (nbytes,), (1,), 0, dtypes.uint8, storage.device)
            if storage.device is not CPU:
                impl = transfer_impl(impl, CPU)  # the bytes copied to the host
            yield f"data/{key}", memoryview(interop.numpy_view(impl))


def _save_global(pickler: pickle._Pickler, obj: _Global) -> None:
    pickler.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
    pickler.memoize(obj)


def _save_dtype(pickler: pickle._Pickler, obj: dtypes.DType) -> None:
    pickler.save(_DTYPE_GLOBALS[obj])


def _save_size(pickler: pickle._Pickler, obj: Size) -> None:
    pickler.save_reduce(_SIZE, (tuple(obj),), obj=obj)


def _save_device(pickler: pickle._Pickler, obj: Device) -> None:
    pickler.save_reduce(_DEVICE, ("cpu",) if obj is CPU else ("cuda", obj.index), obj=obj)


class _CheckpointPickler(pickle._Pickler):
    """The pure-Python pickler, which can write torch's globals without importing torch:
    tensors as _rebuild_tensor_v2 over persistent storage ids, dtypes as torch.float32, ..."""

    dispatch = {
        **pickle._Pickler.dispatch,
        _Global: _save_global,
        dtypes.DType: _save_dtype,
        Size: _save_size,
        Device: _save_device,
    }

    def __init__(self, file, protocol: int, storages: _SavedStorages) -> None:
        super().__init__(file, protocol)
        self._storages = storages

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            return self._storages.persistent_id(obj.impl)
        return None

    def reducer_override(self, obj):
        if not isinstance(obj, Tensor):
            return NotImplemented
        impl = obj._impl
        ref = _StorageRef(impl)
        return (_REBUILD_V2, (ref, impl.offset, impl.shape, impl.strides, False, _hooks()))


def _hooks() -> collections.OrderedDict:
    """The empty backward-hooks dict torch pickles with every tensor."""
    return collections.OrderedDict()


def _archive_name(f) -> str:
    """torch's top folder: the file's name without its extension, "archive" for a stream."""
    if not _is_path(f):
        return "archive"
    return os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"


def _write_record(zf: zipfile.ZipFile, name: str, data) -> None:
    """One stored (uncompressed) record whose bytes start on a multiple of 64, padded with
    an "FB" extra field in its local header as torch's writer does."""
    data = memoryview(data).cast("B")
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.file_size = data.nbytes
    zip64 = data.nbytes * 1.05 > zipfile.ZIP64_LIMIT  # zipfile then adds a 20-byte field
    header = 30 + len(name.encode()) + (20 if zip64 else 0)
    pad = -(zf.fp.tell() + header) % _ALIGNMENT
    if pad:
        pad += _ALIGNMENT if pad < 4 else 0  # an extra field takes at least its 4-byte head
        info.extra = struct.pack("<HH", _PADDING_FIELD, pad - 4) + b"Z" * (pad - 4)
    with zf.open(info, "w", force_zip64=zip64) as dest:
        dest.write(data)


def _pickled(obj, protocol: int, storages: _SavedStorages) -> bytes:
    """data.pkl's bytes; objects pickle cannot write as kael.TypeError."""
    buffer = io.BytesIO()
    try:
        _CheckpointPickler(buffer, protocol, storages).dump(obj)
    except pickle.PicklingError as error:
        raise TypeError(f"kael.save cannot pickle the object: {error}") from None
    return buffer.getvalue()


def _write_checkpoint(obj, opened, name: str, protocol: int) -> None:
    """The archive, its records in torch's order."""
    storages = _SavedStorages()
    pickled = _pickled(obj, protocol, storages)
    serialization_id = f"{secrets.randbelow(10**20):020d}{zlib.crc32(pickled):020d}"
    with zipfile.ZipFile(opened, "w", zipfile.ZIP_STORED) as zf:
        _write_record(zf, f"{name}/data.pkl", pickled)
        _write_record(zf, f"{name}/.format_version", b"1")
        _write_record(zf, f"{name}/.storage_alignment", str(_ALIGNMENT).encode())
        _write_record(zf, f"{name}/byteorder", sys.byteorder.encode())
        for record, data in storages.records():
            _write_record(zf, f"{name}/{record}", data)
        _write_record(zf, f"{name}/version", _FORMAT_VERSION.encode())
        _write_record(zf, f"{name}/.data/serialization_id", serialization_id.encode())


def save(
    obj,
    f,
    pickle_module=None,
    pickle_protocol: int = 2,
    _use_new_zipfile_serialization: bool = True,
) -> None:
    """torch.save: write `obj` (tensors, containers, numbers, strings, dtypes, kael.Size) as
    a checkpoint torch.load reads: views of one storage share one record, strides kept."""
    if pickle_module is not None and pickle_module is not pickle:
        raise TypeError("kael.save pickles with the pickle module only")
    if not _use_new_zipfile_serialization:
        raise ValueError(
            "kael.save writes torch's zip format only: the legacy format"
            " (_use_new_zipfile_serialization=False) is not supported"
        )
    if type(pickle_protocol) is not int or not 2 <= pickle_protocol <= pickle.HIGHEST_PROTOCOL:
        raise ValueError(
            f"pickle_protocol must be an int from 2 to {pickle.HIGHEST_PROTOCOL},"
            f" got {pickle_protocol!r}"
        )
    if _is_path(f):
        with open(f, "wb") as opened:
            _write_checkpoint(obj, opened, _archive_name(f), pickle_protocol)
    elif hasattr(f, "write"):
        _write_checkpoint(obj, f, _archive_name(f), pickle_protocol)
    else:
        raise TypeError(f"f must be a path or a binary file object, got {type(f).__name__}")


FUNCTIONS = {"save": op_door("save", save), "load": op_door("load", load)}
