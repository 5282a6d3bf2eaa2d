"""PTX text as the emulator runs it: entries, their parameters, registers, shared and local
variables, module variables with their bytes, and instructions with decoded operands.

Only what a launch needs is kept; anything the parser does not know raises
PtxSyntaxError naming the line, so an unsupported construct is never skipped silently.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

import numpy as np

from kael.runtime.errors import Error


class PtxSyntaxError(Error):
    """PTX the emulator cannot read."""


# Register classes and the bytes a value of each PTX type takes.
TYPE_BYTES = {
    "pred": 1, "b8": 1, "s8": 1, "u8": 1, "b16": 2, "s16": 2, "u16": 2, "f16": 2,
    "bf16": 2, "b32": 4, "s32": 4, "u32": 4, "f32": 4, "b64": 8, "s64": 8, "u64": 8, "f64": 8,
}  # fmt: skip
# PTX types as NumPy holds them (registers hold raw bits: the unsigned type of their width).
NP = {
    "pred": np.bool_, "b8": np.uint8, "u8": np.uint8, "s8": np.int8, "b16": np.uint16,
    "u16": np.uint16, "s16": np.int16, "f16": np.float16, "b32": np.uint32, "u32": np.uint32,
    "s32": np.int32, "f32": np.float32, "b64": np.uint64, "u64": np.uint64, "s64": np.int64,
    "f64": np.float64,
}  # fmt: skip
UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
SIGNED = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


@dataclass(frozen=True)
class Named:
    name: str


class Reg(Named):
    """A register: %r1, %rd4, %p2."""


class Sym(Named):
    """A variable's name used as a value: its address in its state space."""


class SReg(Named):
    """A special register: %tid.x, %ctaid.x, %laneid, ..."""


class Label(Named):
    """A branch target: $L__BB0_2."""


@dataclass(frozen=True)
class Imm:
    value: int | float
    bits: int = 0  # 4 or 8 for a 0f or 0d literal: `value` is its bit pattern


@dataclass(frozen=True)
class Addr:
    base: Reg | Sym | Imm
    offset: int


@dataclass(frozen=True)
class Vec:
    items: tuple


@dataclass(frozen=True)
class Sink:
    """`_`: a result nobody reads."""


@dataclass(frozen=True)
class Pair:
    """`%r1|%p1`: an instruction's second, predicate result."""

    first: Reg
    second: Reg


@dataclass(frozen=True)
class Instruction:
    opcode: str
    parts: tuple[str, ...]  # the opcode split at its dots
    operands: tuple
    guard: str | None  # the predicate register guarding it, if any
    negated: bool  # @!%p
    line: int
    text: str

    def where(self, function: str) -> str:
        return f"`{self.text}` (line {self.line} of {function})"


@dataclass
class Variable:
    """A .shared, .local, .global or .const variable: its placement and initial bytes."""

    name: str
    space: str
    align: int
    size: int
    init: bytes = b""
    offset: int = 0  # within its space's window (shared and local)


@dataclass
class Function:
    name: str
    params: list[tuple[str, int]]  # (name, bytes)
    code: list[Instruction] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    reg_types: dict[str, str] = field(default_factory=dict)  # prefix or name -> type
    shared: dict[str, Variable] = field(default_factory=dict)
    local: dict[str, Variable] = field(default_factory=dict)
    shared_bytes: int = 0  # the static .shared variables'
    local_bytes: int = 0
    # `.extern .shared` arrays (all at one place: the launch's dynamic shared memory, which
    # starts at dynamic_offset, past the static variables)
    dynamic: dict[str, Variable] = field(default_factory=dict)
    dynamic_offset: int = 0

    def shared_window(self, dynamic_bytes: int) -> int:
        """A CTA's shared bytes in a launch with `dynamic_bytes` of dynamic shared memory."""
        return self.dynamic_offset + dynamic_bytes if dynamic_bytes else self.shared_bytes

    def reg_type(self, name: str) -> str | None:
        found = self.reg_types.get(name)
        return found if found is not None else self.reg_types.get(name.rstrip("0123456789"))


@dataclass
class Module:
    functions: dict[str, Function]
    variables: dict[str, Variable]  # module-scope .global and .const variables


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_ENTRY = re.compile(r"\.(?:visible\s+|weak\s+)?\.?(entry|func)\s+([\w$]+)\s*\((.*?)\)", re.S)
_PARAM = re.compile(r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+([\w$]+)(?:\[(\d+)\])?")
_VARIABLE = re.compile(
    r"^\.(shared|local|global|const)\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+([\w$]+)"
    r"(?:\[(\d*)\])?\s*(?:=\s*\{(.*)\}|=\s*(\S+))?$",
    re.S,
)
_DIRECTIVES = re.compile(r"^(?:\.(?:version|target|address_size)\s+[\w.]+(?:\s*,\s*\w+)*\s*)+")
_REG_DECL = re.compile(r"^\.reg\s+\.(\w+)\s+(.+)$")
_HEADER = (".version", ".target", ".address_size", ".maxntid", ".reqntid", ".minnctapersm",
           ".pragma", ".loc", ".file", ".extern", ".maxnreg", ".noreturn")  # fmt: skip


def parse(text: str) -> Module:
    """The module in `text` (what cuModuleLoadData receives)."""
    lines = _COMMENTS.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    functions: dict[str, Function] = {}
    variables: dict[str, Variable] = {}
    externs: dict[str, Variable] = {}  # module-scope `.extern .shared` arrays
    pos = 0
    for match in _ENTRY.finditer(lines):
        for stmt, line in _statements(lines, pos, match.start()):
            _module_statement(stmt, line, variables, externs)
        kind, name, params = match.groups()
        open_at = lines.find("{", match.end())
        close_at = _matching_brace(lines, open_at)
        if kind == "entry":
            fn = Function(name, _params(params))
            _body(fn, lines, open_at + 1, close_at)
            functions[name] = fn
        pos = close_at + 1
    for stmt, line in _statements(lines, pos, len(lines)):
        _module_statement(stmt, line, variables, externs)
    for fn in functions.values():
        _place_dynamic(fn, externs)
    return Module(functions, variables)


def _extern_shared(stmt: str, line: int) -> Variable | None:
    """The array of `.extern .shared .align A .b8 name[];` (None for other .extern lines)."""
    rest = stmt[len(".extern") :].strip()
    if not rest.startswith(".shared"):
        return None
    var = _variable(rest, line)
    if var is None or var.init:
        raise PtxSyntaxError(f"PTX line {line}: cannot read `{stmt}`")
    return var


def _place_dynamic(fn: Function, externs: dict[str, Variable]) -> None:
    """Every `.extern .shared` array the function sees starts where the launch's dynamic
    shared memory does: past its static variables, aligned for each of them."""
    seen = {**externs, **fn.dynamic}
    align = max([16, *(v.align for v in seen.values())])
    fn.dynamic_offset = -(-fn.shared_bytes // align) * align
    fn.dynamic = {
        name: Variable(v.name, v.space, v.align, 0, b"", fn.dynamic_offset)
        for name, v in seen.items()
    }


def _line_of(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _matching_brace(text: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    raise PtxSyntaxError(f"PTX: unbalanced braces from line {_line_of(text, open_at)}")


def _statements(text: str, start: int, end: int):
    """(statement, line) pairs of text[start:end], labels as `name:` statements of their own
    and grouping braces dropped (a vector operand's braces never start a statement)."""
    at = start
    while at < end:
        semi = text.find(";", at, end)
        stop = end if semi < 0 else semi
        piece = text[at:stop]
        lead = len(piece) - len(piece.lstrip())
        offset = at + lead
        piece = piece.strip()
        while piece:
            if piece[0] in "{}":
                piece = piece[1:].lstrip()
                continue
            label = re.match(r"^([\w$]+):", piece)
            if label:
                yield label.group(0), _line_of(text, offset)
                piece = piece[label.end() :].lstrip()
                continue
            break
        if piece:
            yield " ".join(piece.split()), _line_of(text, offset)
        at = stop + 1


def _params(text: str) -> list[tuple[str, int]]:
    out = []
    for _align, type_, name, count in _PARAM.findall(text):
        out.append((name, TYPE_BYTES[type_] * (int(count) if count else 1)))
    return out


def _variable(stmt: str, line: int) -> Variable | None:
    found = _VARIABLE.match(stmt)
    if not found:
        return None
    space, align, type_, name, count, items, scalar = found.groups()
    if type_ not in TYPE_BYTES:
        raise PtxSyntaxError(f"PTX line {line}: variables of type .{type_} are not supported")
    width = TYPE_BYTES[type_]
    n = int(count) if count else (0 if count == "" else 1)
    init = b""
    if items is not None or scalar is not None:
        values = [_number(v.strip(), line) for v in (items or scalar).split(",") if v.strip()]
        init = b"".join(_pack(v, type_) for v in values)
        n = max(n, len(values))
    return Variable(name, space, int(align) if align else width, n * width, init)


def _pack(value: Imm, type_: str) -> bytes:
    width = TYPE_BYTES[type_]
    if type_.startswith("f") and not value.bits:
        return struct.pack("<d" if width == 8 else "<f", float(value.value))
    return (int(value.value) & ((1 << 8 * width) - 1)).to_bytes(width, "little")


def _module_statement(
    stmt: str, line: int, variables: dict[str, Variable], externs: dict[str, Variable]
) -> None:
    stmt = _DIRECTIVES.sub("", stmt)  # the header's lines end without a semicolon
    if not stmt:
        return
    if stmt.startswith(".extern"):
        var = _extern_shared(stmt, line)
        if var is not None:
            externs[var.name] = var
        return
    if stmt.startswith(_HEADER) or stmt.startswith(".visible"):
        return
    var = _variable(stmt, line)
    if var is None:
        raise PtxSyntaxError(f"PTX line {line}: cannot read `{stmt}`")
    variables[var.name] = var


def _body(fn: Function, text: str, start: int, end: int) -> None:
    for stmt, line in _statements(text, start, end):
        if stmt.endswith(":"):
            fn.labels[stmt[:-1]] = len(fn.code)
        elif stmt.startswith(".reg"):
            _registers(fn, stmt, line)
        elif stmt.startswith((".shared", ".local")):
            var = _variable(stmt, line)
            if var is None:
                raise PtxSyntaxError(f"PTX line {line}: cannot read `{stmt}`")
            _place(fn, var)
        elif stmt.startswith(".extern") and (var := _extern_shared(stmt, line)) is not None:
            fn.dynamic[var.name] = var
        elif stmt.startswith(_HEADER):
            continue
        else:
            fn.code.append(_instruction(stmt, line))


def _place(fn: Function, var: Variable) -> None:
    if var.space == "shared":
        var.offset = -(-fn.shared_bytes // var.align) * var.align
        fn.shared_bytes = var.offset + var.size
        fn.shared[var.name] = var
    else:
        var.offset = -(-fn.local_bytes // var.align) * var.align
        fn.local_bytes = var.offset + var.size
        fn.local[var.name] = var


def _registers(fn: Function, stmt: str, line: int) -> None:
    found = _REG_DECL.match(stmt)
    if not found or found.group(1) not in TYPE_BYTES:
        raise PtxSyntaxError(f"PTX line {line}: cannot read `{stmt}`")
    for name in found.group(2).split(","):
        name = name.strip()
        fn.reg_types[name.split("<")[0]] = found.group(1)


def _instruction(stmt: str, line: int) -> Instruction:
    guard, negated = None, False
    if stmt.startswith("@"):
        head, stmt = stmt.split(None, 1)
        negated = head.startswith("@!")
        guard = head[2:] if negated else head[1:]
    opcode, _, rest = stmt.partition(" ")
    operands = tuple(_operand(o, line) for o in _split_operands(rest)) if rest else ()
    text = f"{'@' + ('!' if negated else '') + guard + ' ' if guard else ''}{stmt}"
    return Instruction(opcode, tuple(opcode.split(".")), operands, guard, negated, line, text)


def _split_operands(text: str) -> list[str]:
    out, depth, current = [], 0, []
    for ch in text:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    out.append("".join(current).strip())
    return out


_SPECIAL = re.compile(
    r"^%(tid|ntid|ctaid|nctaid)\.[xyz]$|^%(laneid|warpid|nwarpid|smid|clock|clock64|lanemask_\w+)$"
)


def _operand(text: str, line: int):
    if text.startswith("{"):
        return Vec(tuple(_operand(t, line) for t in _split_operands(text[1:-1])))
    if text.startswith("["):
        inner = text[1:-1].replace(" ", "")
        found = re.match(r"^([%\w$.]+?)(?:\+(-?(?:0x)?[0-9a-fA-F]+))?$", inner)
        if not found:
            raise PtxSyntaxError(f"PTX line {line}: cannot read the address {text}")
        base = _operand(found.group(1), line)
        return Addr(base, int(found.group(2), 0) if found.group(2) else 0)
    if text == "_":
        return Sink()
    if "|" in text:
        first, second = text.split("|")
        return Pair(Reg(first), Reg(second))
    if _SPECIAL.match(text):
        return SReg(text)
    if text.startswith("%"):
        return Reg(text)
    if text[0].isdigit() or text[0] == "-":
        return _number(text, line)
    if text.startswith("$"):
        return Label(text)
    if re.match(r"^[A-Za-z_][\w$]*$", text):
        return Sym(text)
    raise PtxSyntaxError(f"PTX line {line}: cannot read the operand {text}")


def _number(text: str, line: int) -> Imm:
    if re.match(r"^0[fF][0-9a-fA-F]{8}$", text) or re.match(r"^0[dD][0-9a-fA-F]{16}$", text):
        return Imm(int(text[2:], 16), bits=4 if text[1] in "fF" else 8)
    try:
        return Imm(int(text.rstrip("Uu"), 0))
    except ValueError:
        pass
    try:
        return Imm(float(text))
    except ValueError:
        raise PtxSyntaxError(f"PTX line {line}: cannot read the number {text}") from None
