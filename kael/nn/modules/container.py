"""Containers: Sequential (runs its modules in order), ModuleList, ModuleDict,
ParameterList and ParameterDict, keyed as PyTorch keys them ("0", "1", ... or the names)."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping

from kael.frontend.conveniences import typename
from kael.frontend.tensor import Tensor
from kael.nn.modules.module import Module, add_indent
from kael.nn.parameter import Parameter
from kael.runtime.errors import IndexError, KeyError, TypeError, ValueError


def _position(index, length: int, kind: str) -> int:
    i = operator.index(index)
    if not -length <= i < length:
        raise IndexError(f"index {index} is out of range for a {kind} of {length}")
    return i % length


class _Indexed(Module):
    """A module whose children are named "0", "1", ... in order."""

    def _values(self) -> list:
        return list(self._table().values())

    def _table(self) -> dict:
        return self._modules

    def __len__(self) -> int:
        return len(self._table())

    def __iter__(self) -> Iterator:
        return iter(self._values())

    def _renumber(self, values: list) -> None:
        table = self._table()
        table.clear()
        for i, value in enumerate(values):
            table[str(i)] = value
        self._changed("changes the entries")

    def __getitem__(self, index):
        values = self._values()
        if isinstance(index, slice):
            return self._slice(index)
        return values[_position(index, len(values), type(self).__name__)]

    def _insert(self, index: int, module: Module) -> None:
        """module before position `index` (-len to len), the rest renumbered."""
        if not isinstance(module, Module):
            raise TypeError(f"module should be a kael.nn.Module, got {type(module).__name__}")
        n = len(self)
        if not -n <= operator.index(index) <= n:
            raise IndexError(f"Index out of range: {index} for a {type(self).__name__} of {n}")
        values = self._values()
        values.insert(index, module)
        self._renumber(values)

    def _slice(self, index: slice):
        return type(self)(self._values()[index])

    def __setitem__(self, index, value) -> None:
        """Replace the entry at `index` under its own name (a named Sequential's too)."""
        i = _position(index, len(self), type(self).__name__)
        setattr(self, list(self._table())[i], value)

    def __delitem__(self, index) -> None:
        values = self._values()
        if isinstance(index, slice):
            del values[index]
        else:
            del values[_position(index, len(values), type(self).__name__)]
        self._renumber(values)

    def pop(self, index: int | slice):
        """The entry (or slice) at `index`, removed; the rest renumbered."""
        value = self[index]
        del self[index]
        return value

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]


class Sequential(_Indexed):
    """Modules run one after another, each on the previous one's output; built from
    modules in order or from an OrderedDict of named ones."""

    def __init__(self, *args) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def _slice(self, index: slice) -> Sequential:
        """The modules in the slice under their own names, in this class, as PyTorch slices."""
        return type(self)(OrderedDict(list(self._modules.items())[index]))

    def __add__(self, other: Sequential) -> Sequential:
        """A new Sequential of this one's modules, then other's."""
        return Sequential().extend(self).extend(_sequential_operand(other))

    def __iadd__(self, other: Sequential) -> Sequential:
        return self.extend(_sequential_operand(other))

    def __mul__(self, times: int) -> Sequential:
        """A new Sequential of this one's modules `times` over (the same module objects)."""
        return Sequential().extend(list(self) * _factor(self, times))

    def __rmul__(self, times: int) -> Sequential:
        return self.__mul__(times)

    def __imul__(self, times: int) -> Sequential:
        return self.extend(list(self) * (_factor(self, times) - 1))

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        self._insert(index, module)
        return self

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input


def _sequential_operand(other) -> Sequential:
    """other, which `+` and `+=` on a Sequential take only as another Sequential."""
    if not isinstance(other, Sequential):
        raise ValueError(
            f"add operator supports only objects of Sequential class, but {type(other)} is given."
        )
    return other


def _factor(sequential: Sequential, times) -> int:
    """times, checked as `*` on a Sequential checks it: a positive int."""
    if not isinstance(times, int):
        raise TypeError(f"unsupported operand type(s) for *: {type(sequential)} and {type(times)}")
    if times <= 0:
        raise ValueError(f"Non-positive multiplication factor {times} for {type(sequential)}")
    return times


class ModuleList(_Indexed):
    """A list of submodules, registered (state_dict keys "0.weight", ...) but not called."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        if not isinstance(modules, Iterable):
            raise TypeError(
                f"ModuleList.extend should be called with an iterable, but got "
                f"{type(modules).__name__}"
            )
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        self._insert(index, module)

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        """A new ModuleList of this one's modules, then other's."""
        return ModuleList().extend(self).extend(other)

    def __repr__(self) -> str:
        """PyTorch's form: runs of equal children shown once, as "(0-5): 6 x Block(...)"."""
        runs: list[list] = []  # [first, last, repr]
        for i, module in enumerate(self):
            text = repr(module)
            if runs and runs[-1][2] == text:
                runs[-1][1] = i
            else:
                runs.append([i, i, text])
        name = type(self).__name__
        if not runs:
            return f"{name}()"
        lines = [
            add_indent(
                f"({a}): {text}" if a == b else f"({a}-{b}): {b - a + 1} x {text}",
                2,
                indent_blank=True,  # torch's ModuleList indents blank lines too
            )
            for a, b, text in runs
        ]
        return f"{name}(\n  " + "\n  ".join(lines) + "\n)"


class ParameterList(_Indexed):
    """A list of parameters (tensors become Parameters), keyed "0", "1", ..."""

    def __init__(self, values: Iterable[Tensor] | None = None) -> None:
        super().__init__()
        for value in values or ():
            self.append(value)

    def _table(self) -> dict:
        return self._parameters

    def append(self, value: Tensor) -> ParameterList:
        param = value if isinstance(value, Parameter) else Parameter(value)
        self.register_parameter(str(len(self)), param)
        return self

    def extend(self, values: Iterable[Tensor]) -> ParameterList:
        for value in values:
            self.append(value)
        return self

    def __iadd__(self, values: Iterable[Tensor]) -> ParameterList:
        return self.extend(values)

    def __setitem__(self, index, value) -> None:
        i = _position(index, len(self), "ParameterList")
        self.register_parameter(str(i), value if isinstance(value, Parameter) else Parameter(value))

    def extra_repr(self) -> str:
        """torch's lines: each entry's dtype ("kael.float32") and size."""
        return _entries_repr(enumerate(self), _dtype_name)


def _entries_repr(entries: Iterable[tuple], kind) -> str:
    """PyTorch's lines for a ParameterList's or ParameterDict's entries, indented 2 more
    than other modules' extra_repr (so 4 in the repr); kind(p) names the entry's type."""
    lines = []
    for k, p in entries:
        size = "x".join(map(str, p.shape))
        device = f" ({p.device})" if p.device.type != "cpu" else ""
        lines.append(f"  ({k}): Parameter containing: [{kind(p)} of size {size}{device}]")
    return "\n".join(lines)


def _dtype_name(p: Tensor) -> str:
    return repr(p.dtype)


def _pair(label: str, position: int, entry) -> tuple:
    """One (key, value) element of a sequence given to update(), checked as PyTorch does."""
    if not isinstance(entry, Iterable):
        raise TypeError(
            f"{label} update sequence element #{position} should be Iterable; is "
            f"{type(entry).__name__}"
        )
    if len(entry) != 2:
        raise ValueError(
            f"{label} update sequence element #{position} has length {len(entry)}; 2 is required"
        )
    return entry[0], entry[1]


class _Keyed(Module):
    """A dict of registered values (modules or parameters), in insertion order."""

    _label = "ModuleDict"  # the name PyTorch's messages give it
    _sorts_mappings = False  # whether update() enters a plain mapping's keys sorted

    def _table(self) -> dict:
        return self._modules

    def _put(self, key: str, value) -> None:
        raise NotImplementedError

    def __getitem__(self, key: str):
        table = self._table()
        if key not in table:
            raise KeyError(f"'{key}' is not in the {type(self).__name__}")
        return table[key]

    def __setitem__(self, key: str, value) -> None:
        self._put(key, value)

    def __delitem__(self, key: str) -> None:
        del self._table()[key]
        self._changed("changes the entries")

    def __len__(self) -> int:
        return len(self._table())

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __contains__(self, key: str) -> bool:
        return key in self._table()

    def keys(self):
        return self._table().keys()

    def values(self):
        return self._table().values()

    def items(self):
        return self._table().items()

    def pop(self, key: str):
        value = self[key]
        del self[key]
        return value

    def clear(self) -> None:
        self._table().clear()
        self._changed("changes the entries")

    def update(self, values) -> None:
        """Enter each (key, value) of a mapping, another ModuleDict or ParameterDict, or an
        iterable of pairs, in PyTorch's order."""
        for key, value in self._pairs(values):
            self._put(key, value)

    def _pairs(self, values) -> Iterable[tuple]:
        if not isinstance(values, Iterable):
            raise TypeError(
                f"{self._label}.update should be called with an iterable of key/value pairs, "
                f"but got {type(values).__name__}"
            )
        if isinstance(values, (OrderedDict, _Keyed)):
            return values.items()
        if isinstance(values, Mapping):
            return sorted(values.items()) if self._sorts_mappings else values.items()
        return (_pair(self._label, j, entry) for j, entry in enumerate(values))


class ModuleDict(_Keyed):
    """Submodules by name (state_dict keys "name.weight", ...)."""

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def _put(self, key: str, value) -> None:
        self.add_module(key, value)


class ParameterDict(_Keyed):
    """Parameters by name (tensors become Parameters)."""

    _label = "ParameterDict"
    _sorts_mappings = True  # PyTorch sorts a mapping's parameters by name, but for an
    # OrderedDict's or a ParameterDict's

    def __init__(self, parameters=None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def _table(self) -> dict:
        return self._parameters

    def _put(self, key: str, value) -> None:
        self.register_parameter(key, value if isinstance(value, Parameter) else Parameter(value))

    def get(self, key: str, default=None):
        """The parameter at `key`, or `default` where there is none."""
        return self._parameters.get(key, default)

    def setdefault(self, key: str, default=None):
        """The parameter at `key`, entering `default` there first if it has none."""
        if key not in self:
            self[key] = default
        return self[key]

    def copy(self) -> ParameterDict:
        """A new ParameterDict of the same Parameter objects, in the same order."""
        return ParameterDict(OrderedDict(self.items()))

    def __or__(self, other: ParameterDict) -> ParameterDict:
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        merged = other.copy()
        merged.update(self)
        return merged

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self

    def popitem(self) -> tuple[str, Parameter]:
        """The last entered (key, parameter) pair, removed."""
        if not self._parameters:
            raise KeyError("popitem(): dictionary is empty")
        key = next(reversed(self._parameters))
        return key, self.pop(key)

    def fromkeys(self, keys: Iterable[str], default=None) -> ParameterDict:
        """A new ParameterDict with `default` (as a Parameter) at each of `keys`."""
        return ParameterDict((k, default) for k in keys)

    def extra_repr(self) -> str:
        """torch's lines: each entry's type name ("kael.FloatTensor", torch.typename's)
        and size."""
        return _entries_repr(self.items(), typename)
