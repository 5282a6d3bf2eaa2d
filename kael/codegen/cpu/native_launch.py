"""A kernel launch that Python calls as a builtin: ~0.1 us instead of ~0.8 us through ctypes.

A small eager op or a compiled plan's step spends most of its launch in Python: copying
the argument block's template, storing the call's addresses into it word by word, and the
ctypes call (which converts its arguments and releases and retakes the GIL). A launch
that has been decided once is fixed but for a few words, so it is written down as a
Descriptor: the kernel's address, the template of its argument block, and the positions
of the words each call supplies. `launch(descriptor.address, total, *words)` is a
METH_FASTCALL builtin compiled from the LLVM IR below: it copies the template onto its
stack, stores the words, calls `fn(block, 0, total)` and returns None. The GIL stays held
for small launches (taking it back costs more than they run) and is released from
`release_items` work items on, so other Python threads run beside a longer kernel.

The builtin calls the CPython C API (PyLong_AsLongLong, PyErr_*, PyEval_SaveThread) by
name, resolved in this process when its object code is linked, so the code cached on
disk holds no address. Where the symbols or the JIT's process lookup are missing, or
KAEL_NATIVE_LAUNCH=0, `launch` is `python_launch`, the same call through ctypes.
"""

from __future__ import annotations

import array
import ctypes
import os
import weakref

from kael.codegen.cpu import compiler
from kael.runtime import launcher as launcher_module
from kael.runtime import sync
from kael.runtime.launcher import RELEASE_BYTES

METH_FASTCALL = 0x80
MAX_WORDS = 4096  # an argument block this large (rank-64 views) stays on ctypes' path
_API = (
    "PyLong_AsLongLong", "PyErr_Occurred", "PyErr_SetString", "Py_IncRef",
    "PyEval_SaveThread", "PyEval_RestoreThread", "_Py_NoneStruct", "PyExc_TypeError",
)  # fmt: skip
SYMBOL = "kael_native_launch"
CALL_SYMBOL = "kael_native_call"
COUNT_MESSAGE = "kael launch: the descriptor takes another word count"

# Descriptor words: fn, nwords, npatch, release_items, then npatch word positions, then
# the nwords of the template. Call: launch(descriptor address, total, *npatch words).
_IR = r"""
declare i64 @PyLong_AsLongLong(ptr)
declare ptr @PyErr_Occurred()
declare void @PyErr_SetString(ptr, ptr)
declare void @Py_IncRef(ptr)
declare ptr @PyEval_SaveThread()
declare void @PyEval_RestoreThread(ptr)
@_Py_NoneStruct = external global i8
@PyExc_TypeError = external global ptr
@count_message = private constant [{count_length} x i8] c"{count_message}\00"
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

; Argument %index as an i64; a Python error sets %failed (the caller then returns NULL).
define internal i64 @word(ptr %args, i64 %index, ptr %failed) {
entry:
  %at = getelementptr ptr, ptr %args, i64 %index
  %object = load ptr, ptr %at
  %v = call i64 @PyLong_AsLongLong(ptr %object)
  %maybe = icmp eq i64 %v, -1
  br i1 %maybe, label %check, label %done
check:
  %err = call ptr @PyErr_Occurred()
  %raised = icmp ne ptr %err, null
  br i1 %raised, label %fail, label %done
fail:
  store i1 true, ptr %failed
  br label %done
done:
  ret i64 %v
}

; fn(block, 0, total) unless total <= 0, the GIL released around it where %release is
; set; returns None (a new reference).
define internal ptr @run(ptr %fn, ptr %block, i64 %total, i1 %release) {
entry:
  %empty = icmp sle i64 %total, 0
  br i1 %empty, label %done, label %launch
launch:
  br i1 %release, label %released, label %held
held:
  call void %fn(ptr %block, i64 0, i64 %total)
  br label %done
released:
  %state = call ptr @PyEval_SaveThread()
  call void %fn(ptr %block, i64 0, i64 %total)
  call void @PyEval_RestoreThread(ptr %state)
  br label %done
done:
  call void @Py_IncRef(ptr @_Py_NoneStruct)
  ret ptr @_Py_NoneStruct
}

define internal ptr @count_error() {
  %type_error = load ptr, ptr @PyExc_TypeError
  call void @PyErr_SetString(ptr %type_error, ptr @count_message)
  ret ptr null
}

; launch(descriptor address, total, *words): the template copied, the words stored at
; their positions, then @run (the GIL released from release_items work items).
define ptr @kael_native_launch(ptr %self, ptr %args, i64 %nargs) {
entry:
  %failed = alloca i1
  store i1 false, ptr %failed
  %few = icmp slt i64 %nargs, 2
  br i1 %few, label %bad_count, label %read
read:
  %d_word = call i64 @word(ptr %args, i64 0, ptr %failed)
  %total = call i64 @word(ptr %args, i64 1, ptr %failed)
  %bad_head = load i1, ptr %failed
  br i1 %bad_head, label %error, label %head
head:
  %desc = inttoptr i64 %d_word to ptr
  %fn_word = load i64, ptr %desc
  %fn = inttoptr i64 %fn_word to ptr
  %nwords_at = getelementptr i64, ptr %desc, i64 1
  %nwords = load i64, ptr %nwords_at
  %npatch_at = getelementptr i64, ptr %desc, i64 2
  %npatch = load i64, ptr %npatch_at
  %release_at = getelementptr i64, ptr %desc, i64 3
  %release_items = load i64, ptr %release_at
  %wanted = add i64 %npatch, 2
  %counted = icmp eq i64 %wanted, %nargs
  br i1 %counted, label %copy, label %bad_count
copy:
  %block = alloca i64, i64 %nwords, align 64
  %template_index = add i64 %npatch, 4
  %template = getelementptr i64, ptr %desc, i64 %template_index
  %bytes = shl i64 %nwords, 3
  call void @llvm.memcpy.p0.p0.i64(ptr %block, ptr %template, i64 %bytes, i1 false)
  br label %patch
patch:
  %i = phi i64 [ 0, %copy ], [ %next, %store ]
  %more = icmp slt i64 %i, %npatch
  br i1 %more, label %store, label %patched
store:
  %arg_index = add i64 %i, 2
  %value = call i64 @word(ptr %args, i64 %arg_index, ptr %failed)
  %position_index = add i64 %i, 4
  %position_at = getelementptr i64, ptr %desc, i64 %position_index
  %position = load i64, ptr %position_at
  %slot = getelementptr i64, ptr %block, i64 %position
  store i64 %value, ptr %slot
  %next = add i64 %i, 1
  br label %patch
patched:
  %bad_word = load i1, ptr %failed
  br i1 %bad_word, label %error, label %ready
ready:
  %release = icmp sge i64 %total, %release_items
  %result = call ptr @run(ptr %fn, ptr %block, i64 %total, i1 %release)
  ret ptr %result
bad_count:
  %count = call ptr @count_error()
  ret ptr %count
error:
  ret ptr null
}

; call(fn address, argument block address, total, release): @run on a block of the caller's.
define ptr @kael_native_call(ptr %self, ptr %args, i64 %nargs) {
entry:
  %failed = alloca i1
  store i1 false, ptr %failed
  %counted = icmp eq i64 %nargs, 4
  br i1 %counted, label %read, label %bad_count
read:
  %fn_word = call i64 @word(ptr %args, i64 0, ptr %failed)
  %block_word = call i64 @word(ptr %args, i64 1, ptr %failed)
  %total = call i64 @word(ptr %args, i64 2, ptr %failed)
  %release_word = call i64 @word(ptr %args, i64 3, ptr %failed)
  %bad = load i1, ptr %failed
  br i1 %bad, label %error, label %ready
ready:
  %fn = inttoptr i64 %fn_word to ptr
  %block = inttoptr i64 %block_word to ptr
  %release = icmp ne i64 %release_word, 0
  %result = call ptr @run(ptr %fn, ptr %block, i64 %total, i1 %release)
  ret ptr %result
bad_count:
  %count = call ptr @count_error()
  ret ptr %count
error:
  ret ptr null
}
"""

_IR = _IR.replace("{count_length}", str(len(COUNT_MESSAGE) + 1)).replace(
    "{count_message}", COUNT_MESSAGE
)
KernelFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


class Descriptor:
    """One decided launch: `fn(block, 0, total)` where block is `template` with the words
    at `positions` supplied per call. Keep it alive while its address may be launched."""

    __slots__ = ("words", "address", "fn", "template", "positions", "release_items",
                 "__weakref__")  # fmt: skip

    def __init__(self, fn_address: int, template, positions, release_items: int) -> None:
        template = array.array("q", template)
        positions = tuple(positions)
        if not 0 < len(template) <= MAX_WORDS or any(not 0 <= p < len(template) for p in positions):
            raise ValueError(f"no descriptor for {len(template)} words at {positions}")
        head = [fn_address, len(template), len(positions), release_items, *positions]
        self.words = array.array("q", head) + template
        self.address = self.words.buffer_info()[0]
        self.fn = fn_address
        self.template = template
        self.positions = positions
        self.release_items = release_items
        _described[self.address] = self

    def block(self, words) -> array.array:
        """A copy of the template with `words` at the positions: the block the native
        launch builds, for a launch that goes to the thread pool or through ctypes."""
        block = self.template[:]
        for position, word in zip(self.positions, words, strict=True):
            block[position] = word
        return block


_described: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def describe(fn, template, positions, bytes_per_item: int) -> Descriptor | None:
    """A Descriptor for the kernel `fn` (launcher.kernel_fn's), releasing the GIL from
    RELEASE_BYTES moved; None where the block is too large for the native launch's stack."""
    if not 0 < len(template) <= MAX_WORDS:
        return None
    release = -(-RELEASE_BYTES // max(1, bytes_per_item))
    return Descriptor(fn.address, template, positions, release)


def python_launch(address: int, total: int, *words: int) -> None:
    """The native launch's contract through ctypes (where the builtin cannot be built)."""
    d = _described[address]
    if len(words) != len(d.positions):
        raise TypeError(COUNT_MESSAGE)
    block = d.block(words)
    if total > 0:
        KernelFn(d.fn)(block.buffer_info()[0], 0, total)


class _MethodDef(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("meth", ctypes.c_void_p),
        ("flags", ctypes.c_int),
        ("doc", ctypes.c_char_p),
    ]


def _api_present() -> bool:
    try:
        return all(hasattr(ctypes.pythonapi, name) for name in _API)
    except (AttributeError, OSError):
        return False


def _builtin(name: str, address: int):
    """A METH_FASTCALL builtin function object over the native function at `address`."""
    definition = _MethodDef(name.encode(), address, METH_FASTCALL, None)
    _keep.append(definition)  # CPython keeps a pointer to it for the function's life
    make = ctypes.pythonapi.PyCFunction_NewEx
    make.restype = ctypes.py_object
    make.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    return make(ctypes.addressof(definition), None, None)


_keep: list = []


@sync.cached
def native() -> tuple | None:
    """The compiled builtins (launch, call), or None where they cannot be built here."""
    if os.environ.get("KAEL_NATIVE_LAUNCH", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    if not _api_present():
        return None
    try:
        addresses, _ = compiler.link_glue(SYMBOL, _IR, (SYMBOL, CALL_SYMBOL))
    except RuntimeError:  # the JIT could not resolve the C API here (a static embedding)
        return None
    return _builtin("launch", addresses[SYMBOL]), _builtin("call", addresses[CALL_SYMBOL])


def launcher():
    """`launch(descriptor address, total, *words)`: the native builtin, else python_launch."""
    built = native()
    return python_launch if built is None else built[0]


def install() -> None:
    """Let runtime/launcher.py call kernels inline through the native `call` builtin:
    call(fn address, block address, total, release the GIL)."""
    built = native()
    if built is not None:
        launcher_module.install_direct(built[1])
