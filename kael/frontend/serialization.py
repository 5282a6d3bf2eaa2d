"""kael.save and kael.load: PyTorch's checkpoint format (torch.save's zip archive since 1.6),
read and written with the standard library, so torch checkpoints load into kael and back.

The archive's one top folder holds data.pkl (the object, pickled with each storage as a
persistent id), data/<key> (each storage's little-endian bytes, aligned to 64 bytes),
.format_version, .storage_alignment, byteorder, version and .data/serialization_id.
"""

from __future__ import annotations

import _compat_pickle
import builtins
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
from kael.frontend.storages import UntypedStorage
from kael.frontend.tensor import Layout, Size, Tensor, empty_impl, strided, transfer_impl
from kael.frontend.tracing import op_door
from kael.runtime import dtypes, sync
from kael.runtime.device import CPU, CUDA, Device, cuda_is_available, parse_device
from kael.runtime.errors import Error, TypeError, UnpicklingError, ValueError
from kael.runtime.storage import Storage
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
    dtypes.complex64: ("complex64", "ComplexFloatStorage"),
    dtypes.complex128: ("complex128", "ComplexDoubleStorage"),
}
# torch's storage classes and dtypes that kael has no dtype for: refused, naming the dtype.
_FOREIGN_STORAGES = {
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
# A compressed record (torch writes none) may inflate to this many times its stored size, or
# to _INFLATION_FLOOR bytes: no small file may take gigabytes of memory.
_MAX_INFLATION = 64
_INFLATION_FLOOR = 1 << 20
_READ_BUFFER = 1 << 16  # data.pkl is read in blocks this large (pickle reads byte by byte)
_STRIDED_NAME = "torch.strided"  # str(torch.strided): how torch pickles that layout


# ---- loading ------------------------------------------------------------------------------


class _StorageType:
    """What a torch.<Type>Storage global unpickles to: the dtype of its elements."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: dtypes.DType) -> None:
        self.dtype = dtype


_TENSOR_TYPE = object()  # torch.Tensor and nn.Parameter, as _rebuild_from_type_v2's new_type
# kael's objects whose state no checkpoint may set, even with weights_only=False: dtypes and
# devices every tensor shares, and tensors and storages, which hold raw memory.
_KAEL_TYPES = (dtypes.DType, Device, _StorageType, Tensor, UntypedStorage)


def _check_geometry(storage_offset, size, stride) -> None:
    """Refuse a saved offset, size or stride that is not made of ints (torch's set_ takes
    only ints: 2.0, 0.5 and True are refused), naming the values."""
    if type(storage_offset) is not int:
        raise TypeError(
            f"a tensor in the checkpoint has storage_offset {storage_offset!r}: expected an int"
        )
    for what, values in (("size", size), ("stride", stride)):
        if not isinstance(values, (tuple, list)) or any(type(v) is not int for v in values):
            raise TypeError(
                f"a tensor in the checkpoint has {what} {values!r}: expected a sequence of ints"
            )


def _check_metadata(metadata) -> None:
    """Refuse conj/neg bits: kael tensors carry none."""
    if metadata:
        raise Error(f"kael tensors have no conj or neg bits: cannot load metadata {metadata}")


def _rebuild_parameter(data, requires_grad, backward_hooks) -> Tensor:
    """torch._utils._rebuild_parameter: an nn.Parameter loads as its plain tensor."""
    if not isinstance(data, Tensor):
        raise Error(f"a parameter in the checkpoint has no tensor, got {type(data).__name__}")
    return data


def _rebuild_qtensor(*args) -> Tensor:
    """torch._utils._rebuild_qtensor: refused (its storage's dtype is named before this runs)."""
    raise TypeError("kael has no quantized tensors: cannot load torch._utils._rebuild_qtensor")


def _bytearray(source=b"", *args) -> bytearray:
    """builtins.bytearray of bytes or a string, never of a size: bytearray(2**40) in a file
    would allocate all of it (pickle writes a bytearray's bytes, not its length)."""
    if hasattr(source, "__index__"):
        raise Error(f"a checkpoint may not make bytearray({source!r}): only of bytes or a str")
    return bytearray(source, *args)


def _get_layout(name) -> Layout:
    """torch.serialization._get_layout: "torch.strided" as kael.strided, the one layout of
    kael's tensors; torch's sparse and mkldnn layouts are refused, naming them."""
    if name != _STRIDED_NAME:
        raise TypeError(f"kael has no layout {name!r}: its tensors are all {_STRIDED_NAME}")
    return strided


def _torch_table() -> dict[tuple[str, str], object]:
    """The torch globals a plain checkpoint uses, as kael's equivalents (the tensor rebuild
    functions are each load's own: see _LoadedStorages.rebuilders)."""
    table = {
        ("torch", "Size"): Size,  # its ints checked as torch.Size checks them
        ("torch", "device"): Device,
        ("torch", "Tensor"): _TENSOR_TYPE,
        ("torch.nn.parameter", "Parameter"): _TENSOR_TYPE,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_qtensor"): _rebuild_qtensor,
        ("torch.serialization", "_get_layout"): _get_layout,
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
    ("builtins", "bytearray"): _bytearray,
    ("builtins", "complex"): complex,
    **_TORCH_GLOBALS,
}


# What serialization.add_safe_globals allowed besides: the entries as given (objects, or
# (object, "module.name") pairs), replaced whole under the lock (a load reads a snapshot).
_user_entries: tuple = ()
_user_lock = sync.lock()


def _entry_name(entry) -> tuple[tuple[str, str], object]:
    """((module, name), object) of an add_safe_globals entry: an object named by its
    __module__ and __qualname__, or an (object, "module.name") pair."""
    if isinstance(entry, tuple):
        if len(entry) != 2 or not isinstance(entry[1], str) or "." not in entry[1]:
            raise TypeError(
                f"add_safe_globals: a tuple entry must be (object, 'module.name'), got {entry!r}"
            )
        module, _, name = entry[1].rpartition(".")
        return (module, name), entry[0]
    module = getattr(entry, "__module__", None)
    name = getattr(entry, "__qualname__", None) or getattr(entry, "__name__", None)
    if not isinstance(module, str) or not isinstance(name, str):
        raise TypeError(
            f"add_safe_globals: {entry!r} has no __module__ and __qualname__ to be named by; "
            "pass (object, 'module.name')"
        )
    return (module, name), entry


def add_safe_globals(safe_globals: list) -> None:
    """Allow these globals (classes, functions, or (object, "module.name") pairs) in
    weights_only loads, as torch.serialization.add_safe_globals: GLOBAL names them, REDUCE
    and NEWOBJ may call them, and BUILD may set the state of instances of such classes."""
    global _user_entries
    for entry in safe_globals:
        _entry_name(entry)  # checked before any is added
    with _user_lock:
        _user_entries = (*_user_entries, *safe_globals)


def get_safe_globals() -> list:
    """The globals add_safe_globals allowed, as given."""
    return list(_user_entries)


def clear_safe_globals() -> None:
    """Forget every global add_safe_globals allowed."""
    global _user_entries
    with _user_lock:
        _user_entries = ()


class safe_globals:  # noqa: N801 (torch's name)
    """Allow these globals in weights_only loads inside the block (add_safe_globals, then
    the allowed set as it was before)."""

    def __init__(self, safe_globals: list) -> None:
        self.safe_globals = list(safe_globals)
        self._before: tuple | None = None

    def __enter__(self) -> None:
        global _user_entries
        for entry in self.safe_globals:
            _entry_name(entry)
        with _user_lock:
            self._before = _user_entries
            _user_entries = (*_user_entries, *self.safe_globals)

    def __exit__(self, *exc) -> None:
        global _user_entries
        with _user_lock:
            _user_entries = self._before


def _user_globals() -> dict[tuple[str, str], object]:
    """The allowed globals by (module, name), from the entries as they are now."""
    return dict(_entry_name(entry) for entry in _user_entries)


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


def _weights_only_refusal(what: str) -> UnpicklingError:
    """torch's weights_only refusal: what the file tried, and the way out."""
    return UnpicklingError(
        f"Weights only load failed. {what}. Load with weights_only=False only if you trust"
        " the source of the checkpoint."
    )


def _unsupported_global(module: str, name: str) -> UnpicklingError:
    """torch's weights_only refusal of a global, naming it."""
    return _weights_only_refusal(
        f"Unsupported global: GLOBAL {module}.{name} was not an allowed global by default"
    )


class _CheckpointUnpickler(pickle._Unpickler):
    """data.pkl's unpickler for weights_only=False (the pure-Python one, whose opcodes can be
    replaced): storages from the archive, torch's globals as kael's, other globals imported;
    BUILD may not change a global or kael's own objects."""

    def __init__(self, file, storages: _LoadedStorages, **kwargs) -> None:
        super().__init__(file, **kwargs)
        self._storages = storages
        self._globals = {**_SAFE_GLOBALS, **storages.rebuilders}
        self._names: dict[int, str] = {}  # id of each global the file named -> the name

    def find_class(self, module: str, name: str):
        module, name = _python3_name(module, name)
        found = self._globals.get((module, name))
        if found is None:
            _refuse_foreign_torch(module, name)
            found = self._other_global(module, name)
        self._names[id(found)] = f"{module}.{name}"
        return found

    def _other_global(self, module: str, name: str):
        """A global outside kael's table: imported, torch's own refused."""
        if module == "torch" or module.startswith("torch."):
            raise Error(f"kael cannot load the global {module}.{name}: kael has no equivalent")
        return super().find_class(module, name)

    def persistent_load(self, saved_id) -> UntypedStorage:
        if type(saved_id) is not tuple or len(saved_id) != 5 or saved_id[0] != "storage":
            raise Error(f"unknown persistent id in the checkpoint: {saved_id!r}")
        _, storage_type, key, location, numel = saved_id
        if not isinstance(storage_type, _StorageType):
            raise Error(f"unknown storage type in the checkpoint: {storage_type!r}")
        if type(numel) is not int or numel < 0:
            raise Error(f"storage {key!r} in the checkpoint has {numel!r} elements")
        return self._storages.load(storage_type.dtype, str(key), str(location), numel)

    def _describe(self, obj) -> str:
        """An object as errors name it: the global it was found as, or its type."""
        name = self._names.get(id(obj))
        return f"the global {name}" if name else f"a {type(obj).__name__}"

    def _is_shared(self, obj) -> bool:
        return id(obj) in self._names or isinstance(obj, _KAEL_TYPES)

    def _load_build(self) -> None:
        inst = self.stack[-2]
        if self._is_shared(inst):
            raise Error(
                f"kael.load refuses BUILD on {self._describe(inst)}: a checkpoint may set the"
                " state of the objects it makes only"
            )
        pickle._Unpickler.load_build(self)

    dispatch = {**pickle._Unpickler.dispatch, pickle.BUILD[0]: _load_build}


# Opcodes that change a container on the stack: the container types weights_only lets each
# fill (torch's), and where the container sits when the opcode runs.
_FILLS = {
    "APPEND": ((list,), lambda u: u.stack[-2]),
    "APPENDS": ((list,), lambda u: u.metastack[-1][-1]),
    "SETITEM": ((dict, collections.OrderedDict, collections.Counter), lambda u: u.stack[-3]),
    "SETITEMS": (
        (dict, collections.OrderedDict, collections.Counter),
        lambda u: u.metastack[-1][-1],
    ),
    "ADDITEMS": ((set,), lambda u: u.metastack[-1][-1]),
}
# Opcodes no weights_only checkpoint needs (torch's weights_only unpickler has none of them).
_REFUSED_OPCODES = ("INST", "OBJ", "NEWOBJ_EX", "NEXT_BUFFER", "READONLY_BUFFER")
# What BUILD may set the state of: the containers torch allows, made by this load.
_BUILDABLE = (collections.OrderedDict, collections.Counter)


def _set_state(inst, state) -> None:
    """pickle's BUILD of an instance of an allowed class: its __setstate__, else its
    __dict__ (and slots, from a (dict, slots) state) updated."""
    setstate = getattr(inst, "__setstate__", None)
    if setstate is not None:
        setstate(state)
        return
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    if state:
        inst.__dict__.update(state)
    for key, value in (slots or {}).items():
        setattr(inst, key, value)


def _filling(opcode: str) -> Callable:
    """The opcode's pickle handler, run only when its container is of an allowed type."""
    kinds, target = _FILLS[opcode]
    handler = pickle._Unpickler.dispatch[getattr(pickle, opcode)[0]]

    def load(unpickler: _WeightsOnlyUnpickler) -> None:
        container = target(unpickler)
        if type(container) not in kinds:
            names = " or ".join(kind.__name__ for kind in kinds)
            raise _weights_only_refusal(
                f"{opcode} may only fill a {names}, not {unpickler._describe(container)}"
            )
        handler(unpickler)

    return load


def _refusing(opcode: str) -> Callable:
    """A handler refusing the opcode, naming it."""

    def load(unpickler: _WeightsOnlyUnpickler) -> None:
        raise _weights_only_refusal(f"the pickle opcode {opcode} is not allowed")

    return load


class _WeightsOnlyUnpickler(_CheckpointUnpickler):
    """data.pkl's unpickler for weights_only=True, as torch's: only kael's table of globals,
    calls only of its callables, BUILD only of an OrderedDict or Counter this load made,
    items added only to lists, dicts and sets."""

    def __init__(self, file, storages: _LoadedStorages, **kwargs) -> None:
        super().__init__(file, storages, **kwargs)
        user = _user_globals()
        self._globals.update(user)
        values = self._globals.values()
        self._callables = {id(value) for value in values if callable(value)}
        self._classes = {id(value) for value in values if isinstance(value, type)}
        self._user_classes = {id(value) for value in user.values() if isinstance(value, type)}

    def _other_global(self, module: str, name: str):
        raise _unsupported_global(module, name)

    def _load_reduce(self) -> None:
        args = self.stack.pop()
        func = self.stack[-1]
        if id(func) not in self._callables or type(args) is not tuple:
            raise _weights_only_refusal(
                f"REDUCE may only call an allowed global, not {self._describe(func)}"
            )
        self.stack[-1] = func(*args)

    def _load_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack.pop()
        if id(cls) not in self._classes or type(args) is not tuple:
            raise _weights_only_refusal(
                f"NEWOBJ may only make an allowed class, not {self._describe(cls)}"
            )
        self.append(cls.__new__(cls, *args))

    def _load_build(self) -> None:
        state = self.stack.pop()
        inst = self.stack[-1]
        if id(type(inst)) in self._user_classes:  # a class add_safe_globals allowed
            _set_state(inst, state)
            return
        if type(inst) not in _BUILDABLE:
            raise _weights_only_refusal(
                "BUILD may only set the state of an OrderedDict or Counter the checkpoint"
                f" makes, not {self._describe(inst)}"
            )
        if type(state) is not dict or any(type(key) is not str for key in state):
            raise _weights_only_refusal(
                f"BUILD's state must be a dict of attribute names, got {type(state).__name__}"
            )
        inst.__dict__.update(state)

    dispatch = {
        **_CheckpointUnpickler.dispatch,
        pickle.REDUCE[0]: _load_reduce,
        pickle.NEWOBJ[0]: _load_newobj,
        pickle.BUILD[0]: _load_build,
        **{getattr(pickle, opcode)[0]: _filling(opcode) for opcode in _FILLS},
        **{getattr(pickle, opcode)[0]: _refusing(opcode) for opcode in _REFUSED_OPCODES},
    }


class _Archive:
    """The records of one checkpoint's zip archive, under its top folder."""

    def __init__(self, zf: zipfile.ZipFile, mapped: _mmap.mmap | None) -> None:
        names = zf.namelist()
        if not names:
            raise Error("not a torch.save checkpoint: the zip archive is empty")
        self.zf = zf
        self.mapped = mapped
        here = zf.fp.tell()
        self.size = zf.fp.seek(0, io.SEEK_END)  # the archive's bytes: no record runs past them
        zf.fp.seek(here)
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
        with self.open(name) as record:
            return record.read()

    def open(self, name: str) -> io.BufferedReader:
        """A record's bytes as a stream; a compressed record (torch writes none) only when it
        inflates to at most _MAX_INFLATION times its size, so no small file takes gigabytes."""
        info = self.info(name)
        limit = max(_INFLATION_FLOOR, _MAX_INFLATION * info.compress_size)
        if info.compress_type != zipfile.ZIP_STORED and info.file_size > limit:
            raise Error(
                f"checkpoint record {info.filename} inflates from {info.compress_size} to"
                f" {info.file_size} bytes, past kael.load's limit of {limit} bytes"
            )
        return io.BufferedReader(self.zf.open(info), _READ_BUFFER)

    def info(self, name: str) -> zipfile.ZipInfo:
        """A record's entry; kael.Error naming it when the archive lacks it."""
        try:
            return self.zf.getinfo(self.prefix + name)
        except KeyError:
            raise Error(f"the checkpoint has no record {self.prefix}{name}") from None

    def storage_bytes(self, name: str, nbytes: int) -> Tensor:
        """A record's bytes as a host uint8 tensor: read into new memory, or mapped."""
        info = self.info(name)
        if info.compress_type != zipfile.ZIP_STORED or info.file_size != nbytes:
            raise Error(
                f"checkpoint record {info.filename} holds {info.file_size} bytes"
                f" (compression {info.compress_type}), its storage needs {nbytes} stored bytes"
            )
        if info.compress_size != nbytes:
            raise Error(
                f"checkpoint record {info.filename} declares {nbytes} bytes but stores"
                f" {info.compress_size}"
            )
        if self.mapped is not None:
            return self._mapped_bytes(info)
        if info.header_offset + nbytes > self.size:  # refused before the memory is taken
            raise Error(
                f"checkpoint record {info.filename} runs past the end of the file: its"
                f" {nbytes} bytes follow byte {info.header_offset} of {self.size}"
            )
        raw = Tensor(empty_impl((nbytes,), dtypes.uint8, CPU))
        with self.zf.open(info) as src:
            got = _read_into(src, memoryview(raw.numpy()))
        if got != nbytes:
            raise Error(f"checkpoint record {info.filename} ends after {got} of {nbytes} bytes")
        return raw

    def _mapped_bytes(self, info: zipfile.ZipInfo) -> Tensor:
        """A stored record's bytes in the mapped file, which must hold all of them."""
        start = _data_offset(self.mapped, info)
        if start + info.file_size > len(self.mapped):
            raise Error(
                f"checkpoint record {info.filename} runs past the end of the file: its"
                f" {info.file_size} bytes start at {start} of {len(self.mapped)}"
            )
        array = np.frombuffer(self.mapped, np.uint8, info.file_size, start)
        return Tensor(interop.from_numpy_impl(array))


def _read_into(src, view: memoryview) -> int:
    """Fill `view` from the stream; the bytes read (fewer when the stream ends first)."""
    got = 0
    while got < view.nbytes:
        try:
            count = src.readinto(view[got:])
        except EOFError:  # zipfile's way of saying the archive ended inside the record
            break
        if not count:
            break
        got += count
    return got


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


def _swap_bytes(raw: Tensor, dtype: dtypes.DType) -> None:
    """Turn the file's big-endian elements into this machine's order, in place (I/O decoding);
    a complex element's real and imaginary halves are swapped each on its own, as torch does."""
    word = dtype.to_real().itemsize if dtype.is_complex else dtype.itemsize
    if word > 1:
        raw.numpy().view(f"u{word}").byteswap(inplace=True)


def _restore_location(map_location) -> Callable[[Tensor, str], Tensor]:
    """torch.load's map_location forms as one function: (host bytes, saved location) ->
    the bytes where they belong."""
    if map_location is None:
        return _to_location
    if isinstance(map_location, (str, Device)) or isinstance(getattr(map_location, "type", 0), str):
        # a torch.device too (a port's torch.load(..., map_location=torch.device("cpu")))
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


class _LoadedStorages:
    """The storages of one load: each key's bytes read, byte-swapped and placed once, as a
    kael.UntypedStorage; its tensors view it as the dtype it was saved with."""

    def __init__(self, archive: _Archive, map_location) -> None:
        self._archive = archive
        self._restore = _restore_location(map_location)
        self._big_endian = _byteorder(archive) != sys.byteorder
        self._by_key: dict[str, UntypedStorage] = {}
        # id of each storage above (kept alive there) -> (its memory, the dtype saved with it)
        self._saved: dict[int, tuple[Storage, dtypes.DType]] = {}
        self._tensor_builders = (
            self.rebuild_tensor,
            self.rebuild_tensor_v2,
            self.rebuild_tensor_v3,
            _rebuild_parameter,
        )
        # torch's rebuild globals, as this load's
        self.rebuilders = {
            ("torch._utils", "_rebuild_tensor"): self._tensor_builders[0],
            ("torch._utils", "_rebuild_tensor_v2"): self._tensor_builders[1],
            ("torch._utils", "_rebuild_tensor_v3"): self._tensor_builders[2],
            ("torch._tensor", "_rebuild_from_type_v2"): self.rebuild_from_type_v2,
        }

    def load(self, dtype: dtypes.DType, key: str, location: str, numel: int) -> UntypedStorage:
        """persistent_load's storage: the record data/<key>, placed where map_location says."""
        found = self._by_key.get(key)
        if found is None:
            raw = self._archive.storage_bytes(f"data/{key}", numel * dtype.itemsize)
            if self._big_endian:
                _swap_bytes(raw, dtype)
            storage = self._restore(raw, location)._impl.storage
            found = self._by_key[key] = UntypedStorage.of(storage)
            self._saved[id(found)] = (storage, dtype)
        return found

    def _tensor(self, stored, storage_offset, size, stride, dtype=None) -> Tensor:
        """A kael tensor viewing a loaded storage (as its saved dtype unless `dtype` is given),
        validated against its bytes."""
        saved = self._saved.get(id(stored))
        if saved is None:
            raise Error(f"a tensor in the checkpoint has no storage, got {type(stored).__name__}")
        _check_geometry(storage_offset, size, stride)
        storage, saved_dtype = saved
        if dtype is None:
            dtype = saved_dtype
        elif not isinstance(dtype, dtypes.DType):
            raise Error(f"a tensor in the checkpoint has dtype {dtype!r}: expected a dtype")
        impl = TensorImpl(
            storage, tuple(size), tuple(stride), storage_offset, dtype, storage.device
        )
        return Tensor(impl)

    def rebuild_tensor(self, storage, storage_offset, size, stride) -> Tensor:
        """torch._utils._rebuild_tensor: a view of a typed storage."""
        return self._tensor(storage, storage_offset, size, stride)

    def rebuild_tensor_v2(
        self, storage, storage_offset, size, stride, requires_grad, hooks, metadata=None
    ) -> Tensor:
        """torch._utils._rebuild_tensor_v2 (requires_grad and hooks dropped: no autograd)."""
        _check_metadata(metadata)
        return self._tensor(storage, storage_offset, size, stride)

    def rebuild_tensor_v3(
        self, storage, storage_offset, size, stride, requires_grad, hooks, dtype, metadata=None
    ) -> Tensor:
        """torch._utils._rebuild_tensor_v3: an untyped storage viewed as `dtype`."""
        _check_metadata(metadata)
        return self._tensor(storage, storage_offset, size, stride, dtype)

    def rebuild_from_type_v2(self, func, new_type, args, state) -> Tensor:
        """torch._tensor._rebuild_from_type_v2: the tensor a rebuild function makes (a Tensor
        or a Parameter; kael has no subclasses)."""
        if new_type is not _TENSOR_TYPE:
            raise Error(f"kael cannot load a tensor subclass {new_type!r}")
        if not any(func is builder for builder in self._tensor_builders) or type(args) is not tuple:
            raise Error(
                f"_rebuild_from_type_v2 may only call a tensor rebuild function, not {func!r}"
            )
        return func(*args)


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
    """Unpickle data.pkl, streamed from the archive, reading the storages it names; foreign
    failures as kael.Error."""
    unpickler_type = _WeightsOnlyUnpickler if weights_only else _CheckpointUnpickler
    try:
        archive = _open_archive(opened, mapped)
        storages = _LoadedStorages(archive, map_location)
        with archive.open("data.pkl") as pickled:
            return unpickler_type(pickled, storages, **pickle_args).load()
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
    try:
        return _mmap.mmap(opened.fileno(), 0, access=_mmap.ACCESS_COPY)
    except (OSError, builtins.ValueError) as e:  # an empty file cannot be mapped
        raise Error(f"kael.load: cannot map the file for mmap=True: {e}") from None


def _weights_only(weights_only, pickle_module) -> bool:
    """torch.load's weights_only: None is True unless a pickle module is given; True with a
    pickle module is refused, as torch refuses it."""
    if weights_only is None:
        return pickle_module is None
    if not isinstance(weights_only, bool):
        raise TypeError(f"weights_only must be a bool or None, got {type(weights_only).__name__}")
    if weights_only and pickle_module is not None:
        raise Error("Can not safely load weights when explicit pickle_module is specified")
    return weights_only


def load(
    f,
    map_location=None,
    pickle_module=None,
    *,
    weights_only: bool | None = None,
    mmap=None,
    **pickle_load_args,
) -> object:
    """torch.load: the object a torch.save (or kael.save) checkpoint holds, its tensors as
    kael tensors; storages shared in the file stay shared. A saved storage, typed or untyped,
    loads as a kael.UntypedStorage of its bytes (kael has no TypedStorage: view it with
    kael.empty(0, dtype=...).set_(storage)). `weights_only` (None: True, unless a
    pickle_module is given, as torch's) refuses every global but tensors, containers, numbers,
    strings, dtypes and torch.Size, and any change to them."""
    if pickle_module is not None and pickle_module is not pickle:
        raise TypeError("kael.load unpickles with the pickle module only")
    weights_only = _weights_only(weights_only, pickle_module)
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
_UNTYPED_STORAGE = _Global("torch.storage", "UntypedStorage")  # as torch.save writes it
_GET_LAYOUT = _Global("torch.serialization", "_get_layout")


class _StorageRef:
    """A tensor's storage while pickling: persistent_id turns it into torch's storage id."""

    __slots__ = ("impl",)

    def __init__(self, impl: TensorImpl) -> None:
        self.impl = impl


class _SavedStorages:
    """The storages a checkpoint writes, keyed "0", "1", ... in the order tensors reach them."""

    def __init__(self) -> None:
        self.entries: dict[int, tuple[str, Storage, dtypes.DType]] = {}

    def persistent_id(self, storage: Storage, dtype: dtypes.DType, storage_type: _Global) -> tuple:
        """torch's ("storage", <Type>Storage, key, location, numel) for a storage saved as
        `dtype` (a tensor's, or uint8 for a kael.UntypedStorage)."""
        entry = self.entries.setdefault(id(storage), (str(len(self.entries)), storage, dtype))
        key, _, saved_dtype = entry
        if saved_dtype is not dtype:
            raise Error(
                "Cannot save multiple tensors or storages that view the same data as different"
                f" types ({saved_dtype} and {dtype})"
            )
        location = "cpu" if storage.device is CPU else "cuda:0"
        return ("storage", storage_type, key, location, storage.nbytes // dtype.itemsize)

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


def _save_layout(pickler: pickle._Pickler, obj: Layout) -> None:
    """kael.strided as torch pickles torch.strided (kael has no other layout)."""
    pickler.save_reduce(_GET_LAYOUT, (_STRIDED_NAME,), obj=obj)


class _CheckpointPickler(pickle._Pickler):
    """The pure-Python pickler, which can write torch's globals without importing torch:
    tensors as _rebuild_tensor_v2 over persistent storage ids, dtypes as torch.float32, ..."""

    dispatch = {
        **pickle._Pickler.dispatch,
        _Global: _save_global,
        dtypes.DType: _save_dtype,
        Size: _save_size,
        Device: _save_device,
        Layout: _save_layout,
    }

    def __init__(self, file, protocol: int, storages: _SavedStorages) -> None:
        super().__init__(file, protocol)
        self._storages = storages

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            impl = obj.impl
            storage_type = _STORAGE_GLOBALS[impl.dtype]
            return self._storages.persistent_id(impl.storage, impl.dtype, storage_type)
        if type(obj) is UntypedStorage:
            return self._storages.persistent_id(obj._storage, dtypes.uint8, _UNTYPED_STORAGE)
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
    """data.pkl's bytes; objects pickle cannot write (PicklingError, or TypeError "cannot
    pickle 'generator' object") as kael.TypeError, still a TypeError as torch's."""
    buffer = io.BytesIO()
    try:
        _CheckpointPickler(buffer, protocol, storages).dump(obj)
    except Error:
        raise
    except (pickle.PicklingError, builtins.TypeError) as error:
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
    """torch.save: write `obj` (tensors, kael.UntypedStorage, containers, numbers, strings,
    dtypes, kael.Size) as a checkpoint torch.load reads: views of one storage share one
    record, strides kept."""
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
