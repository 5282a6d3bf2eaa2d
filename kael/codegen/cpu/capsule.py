"""The DLPack capsule's destructor as native code, built with llvmlite.

A consumer that fails to take a capsule (NumPy meeting a bfloat16 tensor) drops it with
its own error pending; CPython then runs the capsule's destructor. A destructor written in
Python (a ctypes callback) cannot run then: every call it makes sees the pending error,
the callback's own return is turned into a SystemError, and the export it should release
leaks. This one touches no Python object until it has set the pending error aside: it reads
the capsule's fields directly (CPython's PyCapsule after PyObject_HEAD: pointer, name,
context), and where the name is still kael's own (a consumer renames what it takes) it calls
PyErr_Fetch, the DLManagedTensor's deleter (kael's callback, which now runs cleanly), then
PyErr_Restore. The context is a table of words the frontend fills (frontend/dlpack.py):
those two functions' addresses, kael's two capsule names' addresses and the offsets of
the two managed structures' deleters, so the code holds no address of its own and may be
cached on disk like any kernel.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import handwritten

SYMBOL = "kael_dlpack_capsule_destructor"
POINTER, NAME, CONTEXT = 16, 24, 32  # byte offsets of PyCapsule's fields
# The context table's words.
FETCH, RESTORE, CLASSIC_NAME, VERSIONED_NAME, CLASSIC_DELETER, VERSIONED_DELETER = range(6)
WORDS = 6


def _emit(module: ir.Module) -> list[str]:
    """void SYMBOL(PyObject *capsule): the release described above."""
    i8p, i64 = ir.IntType(8).as_pointer(), ir.IntType(64)
    void = ir.VoidType()
    fn = ir.Function(module, ir.FunctionType(void, [i8p]), SYMBOL)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    capsule = fn.args[0]

    def field(base: ir.Value, offset, kind: ir.Type) -> ir.Value:
        at = b.gep(base, [offset if isinstance(offset, ir.Value) else i64(offset)])
        return b.load(b.bitcast(at, kind.as_pointer()))

    table = field(capsule, CONTEXT, i64.as_pointer())

    def word(k: int) -> ir.Value:
        return b.load(b.gep(table, [i64(k)]))

    name = b.ptrtoint(field(capsule, NAME, i8p), i64)
    classic = b.icmp_unsigned("==", name, word(CLASSIC_NAME))
    ours = b.or_(classic, b.icmp_unsigned("==", name, word(VERSIONED_NAME)))
    with b.if_then(ours):
        managed = field(capsule, POINTER, i8p)
        slots = b.alloca(i8p, 3)
        parts = [b.gep(slots, [i64(k)]) for k in range(3)]
        fetch_type = ir.FunctionType(void, [i8p.as_pointer()] * 3)
        b.call(b.inttoptr(word(FETCH), fetch_type.as_pointer()), parts)
        offset = b.select(classic, word(CLASSIC_DELETER), word(VERSIONED_DELETER))
        deleter = field(managed, offset, i8p)
        with b.if_then(b.icmp_unsigned("!=", deleter, ir.Constant(i8p, None))):
            delete_type = ir.FunctionType(void, [i8p])
            b.call(b.bitcast(deleter, delete_type.as_pointer()), [managed])
        restore_type = ir.FunctionType(void, [i8p] * 3)
        b.call(b.inttoptr(word(RESTORE), restore_type.as_pointer()), [b.load(p) for p in parts])
    b.ret_void()
    return [SYMBOL]


def destructor() -> handwritten.Library:
    """The compiled library holding SYMBOL (once per process; its address is the
    destructor every kael capsule gets)."""
    return handwritten.compiled(SYMBOL, _emit, passes=None, tiered=False)
