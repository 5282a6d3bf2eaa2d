"""A compiled function's positional call signature tested field by field, as Python lines.

CompiledFunction._positional finds a call's plan by building its signature (a tuple per
tensor: dtype, device, shape, strides, offset, bytes, aliasing) and hashing it into a dict:
about 1.1 us of power iteration's 5.5 us call (kael, A, v). Most programs call a compiled
function with one signature again and again (or two in turn), so for each of the two
signatures it last ran, `lines` writes the same test out against that one key, each
field compared with a constant (an argument object: its kind, the paths of what it
holds, its values, and its tensors as tensor arguments are), and the replay writer puts
them in front of the plan's replay (replay.build_guarded): one function that checks a call
and runs it, with no tuple built and nothing hashed. A call that fails any test gets MISS back and takes the
dict path, which decides it as before.
"""

from __future__ import annotations

from collections.abc import Callable

MISS = object()  # the call is not the one the function was written for

# Above this many tensors the pairwise overlap tests are written as one call instead.
_INLINE_PAIRS = 4


def supported(parts: tuple) -> bool:
    """Whether every leaf of a positional signature is a kind `lines` can test: a tensor,
    a float, a generator, a constant compared by value (an int, a str, a module, a
    dtype...), or an object described by what it holds (compiled._held; not one too big
    to guard)."""
    return all(
        part[0] in ("tensor", "const", float, int, "generator")
        or part[0] == "holds"
        and part[2] is not None
        for part in parts
    )


def lines(parts: tuple, twins: Callable[[tuple], object], always: bool, names: dict) -> list[str]:
    """Lines that return MISS unless `args` (the call's positional arguments) match the
    signature `parts` (compiled._signature's, every part `supported`), binding tensor j
    to `t{j}` and its storage to `st{j}`. Two different storages must not overlap: tested
    pair by pair, or by `twins(tensors)` (None when none do) where the tensors are many
    or `always` (the plan reads tensors from outside its arguments too). The values the
    lines name go into `names`, the function's globals; a miss returns `_MISS`."""

    def constant(value) -> str:
        name = f"_g{len(names)}"
        names[name] = value
        return name

    from kael.frontend.random import Generator, default_generator

    names.update(_MISS=MISS, _Generator=Generator, _default=default_generator)
    generators: list[str] = []  # the locals of the generator leaves so far, in order
    miss = "return _MISS"
    locals_, tests = [], []
    alone: list[int] = []  # the tensors whose storage is no earlier tensor's
    count = 0  # tensors bound so far
    for i, part in enumerate(parts):
        if part[0] == "tensor":
            locals_.append(f"t{count}")
            tests += _tensor_tests(count, part, alone, constant)
            count += 1
            continue
        locals_.append(f"a{i}")
        if part[0] is float or part[0] is int:  # a run-time float, or a dynamic int
            tests.append(f"if type(a{i}) is not {part[0].__name__}: {miss}")
        elif part[0] == "generator":  # compiled._generator_part: the default, or the k-th
            if part[1] == "default":
                tests.append(f"if a{i} is not _default: {miss}")
            elif part[1] < len(generators):  # the same object as an earlier leaf
                tests.append(f"if a{i} is not {generators[part[1]]}: {miss}")
            else:
                others = "".join(f" or a{i} is {g}" for g in generators)
                tests.append(f"if type(a{i}) is not _Generator or a{i} is _default{others}: {miss}")
                generators.append(f"a{i}")
        elif part[0] == "const":
            kind, value = constant(part[1]), constant(part[2])
            tests.append(f"if type(a{i}) is not {kind} or a{i} != {value}: {miss}")
        else:  # an object, by what it holds: its tensors bound as the arguments' are
            tests += _held_tests(i, part, count, alone, constant)
            count += sum(1 for inner in part[3] if inner[0] == "tensor")
    if always or count > _INLINE_PAIRS:
        tensors = "".join(f"t{j}, " for j in range(count))
        tests.append(f"if {constant(twins)}(({tensors})) is not None: {miss}")
    else:  # Storage.overlaps of two different storages, written out for each pair
        tests += [
            f"if not (st{a}.lazy or st{b}.lazy) and st{a}.ptr < st{b}.ptr + st{b}.nbytes "
            f"and st{b}.ptr < st{a}.ptr + st{a}.nbytes: {miss}"
            for n, b in enumerate(alone)
            for a in alone[:n]
        ]
    unpack = [f"{', '.join(locals_)}, = args"] if locals_ else []
    return [f"if len(args) != {len(parts)}: {miss}", *unpack, *tests]


def _tensor_tests(j: int, part: tuple, alone: list[int], constant: Callable) -> list[str]:
    """Lines testing tensor `t{j}` against its signature part (type, layout, storage size,
    the storage it shares with an earlier tensor or that it shares none), binding `m{j}`
    and `st{j}`; a tensor with a storage of its own joins `alone`."""
    _, dtype, device, shape, strides, offset, nbytes, alias, kind = part
    miss = "return _MISS"
    tests = [
        f"if type(t{j}) is not {constant(kind)}: {miss}",
        f"m{j} = t{j}._impl",
        f"if m{j}.shape != {shape!r} or m{j}.strides != {strides!r}"
        + ("" if offset is None else f" or m{j}.offset != {offset}")  # None: found anywhere
        + f" or m{j}.dtype is not {constant(dtype)} or m{j}.device is not "
        f"{constant(device)}: {miss}",
        f"st{j} = m{j}.storage",
        f"if st{j}.nbytes != {nbytes}: {miss}",
    ]
    if alias != j:  # a view of an earlier tensor's storage
        return [*tests, f"if st{j} is not st{alias}: {miss}"]
    tests += [f"if st{j} is st{k}: {miss}" for k in alone]
    alone.append(j)
    return tests


def _held_tests(i: int, part: tuple, first: int, alone: list[int], constant: Callable) -> list[str]:
    """Lines testing argument object `a{i}` against its part (compiled._held's): its kind,
    the paths of what it holds, each value other than a tensor by its part, and each
    tensor, bound to `t{first}`, `t{first + 1}`... as _tensor_tests does."""
    from kael.frontend.compiled import contents  # compiled imports this module

    miss = "return _MISS"
    _, kind, paths, inner = part
    tests = [
        f"if type(a{i}) is not {constant(kind)}: {miss}",
        f"h{i} = {constant(contents)}(a{i})",
        f"if h{i} is None or h{i}[0] != {constant(paths)}: {miss}",
        f"v{i} = h{i}[1]",
    ]
    j = first
    for k, value in enumerate(inner):
        if value[0] != "tensor":
            tests.append(f"if v{i}[{k}] != {constant(value)}: {miss}")
            continue
        tests.append(f"t{j} = v{i}[{k}]")
        tests += _tensor_tests(j, value, alone, constant)
        j += 1
    return tests
