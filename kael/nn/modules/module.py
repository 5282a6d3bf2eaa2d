"""nn.Module: PyTorch's container of parameters, buffers and submodules, for inference.

Assigning a Parameter, a Buffer, a Module (or None to a name already registered as one)
registers it by name, in order; state_dict() and load_state_dict() use PyTorch's keys
("layer.0.weight"), so a torch checkpoint's state dict (torch tensors, NumPy arrays or
kael tensors) loads into the same architecture written with kael.nn. Calling a module runs
its forward pre-hooks, forward() and forward hooks. kael has no autograd: train()/eval()
switch what dropout and batch norm do, and nothing records gradients.
"""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from kael.frontend.tensor import Tensor, to_arguments
from kael.nn.modules.state import as_state_tensor, type_name
from kael.nn.parameter import Buffer, Parameter, UninitializedBuffer
from kael.runtime import dtypes
from kael.runtime.dtypes import as_dtype
from kael.runtime.errors import AttributeError, Error, KeyError, TypeError, ValueError
from kael.runtime.tracestate import bump_epoch
from kael.runtime.tracestate import state as _trace_state

_hook_ids = itertools.count()


class IncompatibleKeys(NamedTuple):
    """load_state_dict's result: the keys the module missed and the keys it did not know."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        """PyTorch's: a sentence when every key matched, the two lists otherwise."""
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (
            f"{type(self).__name__}(missing_keys={self.missing_keys!r}, "
            f"unexpected_keys={self.unexpected_keys!r})"
        )

    __str__ = __repr__


class RemovableHandle:
    """What register_*_hook returns: remove() (or leaving a with block) drops the hook."""

    def __init__(self, *tables: dict) -> None:
        self.id = next(_hook_ids)
        self._tables = tables

    def remove(self) -> None:
        for table in self._tables:
            table.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def _check_name(name, kind: str, owner: Module) -> None:
    """PyTorch's rules for a registered name: a non-empty str without '.', not already
    another attribute of the module."""
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
    if not name:
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
    if hasattr(owner, name) and name not in getattr(owner, f"_{kind}s", {}):
        raise KeyError(f"attribute '{name}' already exists")


def add_indent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    return "\n".join([lines[0]] + [" " * spaces + line for line in lines[1:]])


# Every module's tables, each made empty by its factory.
_TABLES: dict[str, Callable[[], Any]] = {
    "_parameters": dict,
    "_buffers": dict,
    "_non_persistent_buffers_set": set,
    "_modules": dict,
    "_forward_pre_hooks": dict,
    "_forward_hooks": dict,
    "_hooks_with_kwargs": dict,
}


class Module:
    """Base class of every layer: subclasses set their state in __init__ and define forward."""

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        for name, make in _TABLES.items():
            object.__setattr__(self, name, make())

    def __setstate__(self, state: dict) -> None:
        """Unpickling and deepcopy: the pickled attributes, plus any table an older pickle
        lacks; subclasses extend it with super().__setstate__(state), as in PyTorch."""
        self.__dict__.update(state)
        for name, make in _TABLES.items():
            if name not in self.__dict__:
                object.__setattr__(self, name, make())
        if "_compile_args" in state:
            args, kwargs = state["_compile_args"]
            self.compile(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    # ---- registration -------------------------------------------------------------------

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Enter `param` (a Parameter, or None for a declared but absent one) as `name`."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name(name, "parameter", self)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type_name(param)}' object to parameter '{name}' "
                "(kael.nn.Parameter or None required)"
            )
        self._parameters[name] = param
        self._changed()

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Enter `tensor` as buffer `name`: module state that is not a parameter (running
        statistics); non-persistent buffers stay out of state_dict()."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name(name, "buffer", self)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type_name(tensor)}' object to buffer '{name}' "
                "(kael.Tensor or None required)"
            )
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
        if isinstance(tensor, (Buffer, Parameter)):
            tensor = Tensor(tensor._impl)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)
        self._changed()

    def add_module(self, name: str, module: Module | None) -> None:
        """Enter `module` as submodule `name` (its state's keys start with "name.")."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type_name(module)} is not a Module subclass")
        _check_name(name, "module", self)
        self._modules[name] = module
        self._changed()

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params, buffers, modules = (d.get(k) for k in ("_parameters", "_buffers", "_modules"))
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type_name(value)}' as parameter '{name}' "
                    "(kael.nn.Parameter or None expected)"
                )
            params[name] = None
            self._changed()
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            modules[name] = value
            self._changed()
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type_name(value)}' as child module '{name}' "
                    "(kael.nn.Module or None expected)"
                )
            modules[name] = None
            self._changed()
        elif isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type_name(value)}' as buffer '{name}' "
                    "(kael.Tensor or None expected)"
                )
            if isinstance(value, Buffer):
                self._forget(name, keep="_buffers")
                self.register_buffer(name, value)
            else:
                buffers[name] = value
                self._changed()
        else:
            object.__setattr__(self, name, value)
            if params is not None:  # a setting (eps, p) a compiled forward read as a constant
                self._changed()

    def _forget(self, name: str, keep: str) -> None:
        """Drop `name` from the instance dict and every table but `keep`, where it is about
        to be registered again in its place (a replaced child keeps its position)."""
        self.__dict__.pop(name, None)
        for table in ("_parameters", "_buffers", "_modules"):
            if table != keep:
                self.__dict__[table].pop(name, None)
        if keep != "_buffers":
            self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            entries = d.get(table)
            if entries is not None and name in entries:
                if _trace_state.trace is not None:
                    self._read_by_trace()
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _read_by_trace(self) -> None:
        """A compiled function's trace reads this module: from now on a change of its state
        or settings makes such functions trace again (tracestate.epoch). Modules no trace
        has read (being built, say) change without making anything trace again."""
        object.__setattr__(self, "_in_a_plan", True)
        _trace_state.trace.reads_module = True

    def _changed(self) -> None:
        """This module's state or settings moved: plans that read it must not replay."""
        if self.__dict__.get("_in_a_plan"):
            bump_epoch()

    def __delattr__(self, name: str) -> None:
        for table in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__[table]:
                del self.__dict__[table][name]
                self._non_persistent_buffers_set.discard(name)
                self._changed()
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        names = set(super().__dir__())
        for table in ("_parameters", "_buffers", "_modules"):
            names.update(self.__dict__[table])
        return sorted(n for n in names if not n[0].isdigit())

    # ---- traversal ----------------------------------------------------------------------

    def named_modules(
        self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """This module and every submodule below it, depth first, each once by default."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                below = f"{prefix}.{name}" if prefix else name
                yield from module.named_modules(memo, below, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(self, table: str, prefix: str, recurse: bool, remove_duplicate: bool):
        seen = set()
        owners = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for owner_prefix, owner in owners:
            for name, value in owner.__dict__[table].items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (f"{owner_prefix}.{name}" if owner_prefix else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """(key, parameter) pairs in registration order; a shared parameter once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path ("" is the module itself)."""
        module = self
        for atom in target.split(".") if target else ():
            if not isinstance(module, Module) or atom not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no attribute `{atom}`")
            module = module._modules[atom]
        return module

    def _owner_and_name(self, target: str) -> tuple[Module, str]:
        path, _, name = target.rpartition(".")
        return self.get_submodule(path), name

    def get_parameter(self, target: str) -> Parameter:
        owner, name = self._owner_and_name(target)
        if name not in owner._parameters:
            raise AttributeError(f"{type(owner).__name__} has no parameter `{name}`")
        return owner._parameters[name]

    def get_buffer(self, target: str) -> Tensor:
        owner, name = self._owner_and_name(target)
        if name not in owner._buffers:
            raise AttributeError(f"{type(owner).__name__} has no buffer `{name}`")
        return owner._buffers[name]

    # ---- state --------------------------------------------------------------------------

    def _local_state(self) -> dict[str, Tensor]:
        state = {k: v for k, v in self._parameters.items() if v is not None}
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                state[name] = buffer
        return state

    def state_dict(
        self, *args, destination=None, prefix: str = "", keep_vars: bool = False
    ) -> OrderedDict:
        """Every parameter and persistent buffer by dotted key, as plain tensors over the
        module's own elements (keep_vars: the Parameter objects themselves)."""
        if args:  # PyTorch's deprecated positional form
            warnings.warn(
                "Positional args are being deprecated, use kwargs instead. Refer to "
                "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                "#torch.nn.Module.state_dict for details.",
                FutureWarning,
                stacklevel=2,
            )
            destination = args[0] if destination is None else destination
            prefix = args[1] if len(args) > 1 and prefix == "" else prefix
            keep_vars = args[2] if len(args) > 2 and keep_vars is False else keep_vars
        if destination is None:
            destination = OrderedDict()
        for name, value in self._local_state().items():
            keep = keep_vars or type(value) is Tensor
            destination[prefix + name] = value if keep else Tensor(value._impl)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=f"{prefix}{name}.", keep_vars=keep_vars
                )
        return destination

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy each entry into the parameter or buffer of its key (converted to its dtype
        and device), as PyTorch does: a shape mismatch is an error; with `strict`, so are
        missing and unexpected keys. `assign` puts the checkpoint's tensors in instead."""
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type_name(state_dict)}.")
        missing, unexpected, problems = [], [], []
        for prefix, module in self.named_modules(remove_duplicate=False):
            found = module._load_local(state_dict, f"{prefix}." if prefix else "", assign)
            for into, entries in zip((missing, unexpected, problems), found, strict=True):
                into.extend(entries)
        if strict:
            if unexpected:
                problems.insert(
                    0,
                    "Unexpected key(s) in state_dict: "
                    + ", ".join(f'"{k}"' for k in unexpected)
                    + ". ",
                )
            if missing:
                problems.insert(
                    0,
                    "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ",
                )
        if problems:
            raise Error(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                + "\n\t".join(problems)
            )
        return IncompatibleKeys(missing, unexpected)

    def _load_local(self, state_dict, prefix: str, assign: bool) -> tuple[list, list, list]:
        """Load this module's own entries (keys `prefix` + name); (missing keys, unexpected
        keys under `prefix` that name no entry or child, problems), as PyTorch finds them."""
        missing, problems = [], []
        local = self._local_state()
        for name, current in local.items():
            key = prefix + name
            if key not in state_dict:
                legacy = self._legacy_entry(state_dict, prefix, name)
                if legacy is None:
                    missing.append(key)
                    continue
                entry = legacy
            else:
                entry = state_dict[key]
            try:
                value = as_state_tensor(entry)
            except (Error, TypeError) as e:
                problems.append(f'While copying the parameter named "{key}", {e}')
                continue
            if not current.shape and value.shape == (1,):  # a 0-d parameter saved as 1-d
                value = value[0]
            if value.shape != current.shape:
                problems.append(
                    f"size mismatch for {key}: copying a param with shape {list(value.shape)} "
                    f"from checkpoint, the shape in current model is {list(current.shape)}."
                )
                continue
            if assign:
                value = Parameter(value) if isinstance(current, Parameter) else value
                setattr(self, name, value)
            else:
                current.copy_(value)
        unexpected = []
        for key in state_dict:
            first = key[len(prefix) :].split(".", 1)[0]
            if key.startswith(prefix) and first not in self._modules and first not in local:
                unexpected.append(key)
        return missing, unexpected, problems

    def _legacy_entry(self, state_dict, prefix: str, name: str):
        """The value an older checkpoint stands for where it lacks entry `name` (None: it
        is missing); BatchNorm's batch count is the one such entry."""
        return None

    # ---- modes and conversions ----------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        """Training mode (dropout drops, batch norm uses and updates batch statistics) for
        this module and every submodule; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        object.__setattr__(self, "training", mode)
        self._changed()  # a compiled forward traced in the other mode traces again
        for module in self.children():  # each child's own train(), as PyTorch calls it
            module.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Self for requires_grad=False; kael.Error for True (kael has no autograd)."""
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Nothing to do: kael keeps no gradients."""

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """fn(m) for every submodule, children first, then self; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply(self, convert: Callable[[Tensor], Tensor]) -> Module:
        """Replace each parameter's and buffer's elements by convert(tensor), keeping the
        Parameter objects (PyTorch's param.data = ...) and a lazy module's uninitialized
        buffers, which then materialize with the converted dtype and device (as torch's)."""
        for module in self.modules():
            for param in module._parameters.values():
                if param is not None:
                    param.data = convert(param)
            for name, buffer in module._buffers.items():
                if isinstance(buffer, UninitializedBuffer):
                    buffer.data = convert(buffer)
                elif buffer is not None:
                    module._buffers[name] = convert(buffer)
        self._changed()
        return self

    def to(self, *args, dtype=None, device=None, non_blocking: bool = False) -> Module:
        """Tensor.to's arguments (a device, a dtype, a tensor for both): floating and complex
        parameters and buffers take the dtype (a complex one to a real dtype drops its
        imaginary part, warning as Tensor.to), every one the device; returns self."""
        dtype, device, non_blocking, _ = to_arguments(args, dtype, device, non_blocking)
        dtype = None if dtype is None else as_dtype(dtype)
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(
                "nn.Module.to only accepts floating point or complex dtypes, but got desired "
                f"dtype={dtype}"
            )
        if dtype is not None and dtype.is_complex:
            warnings.warn(
                "Complex modules are a new feature under active development whose design may "
                "change, and some modules might not work as expected when using complex tensors "
                "as parameters or buffers.",
                stacklevel=2,
            )

        def convert(t: Tensor) -> Tensor:
            floating = t.dtype.is_floating_point or t.dtype.is_complex
            want = dtype if floating else None
            return t.to(device=device, dtype=want, non_blocking=non_blocking)

        return self._apply(convert)

    def _cast_floats(self, dtype) -> Module:
        return self._apply(lambda t: t.to(dtype) if t.dtype.is_floating_point else t)

    def float(self) -> Module:
        return self._cast_floats(dtypes.float32)

    def double(self) -> Module:
        return self._cast_floats(dtypes.float64)

    def half(self) -> Module:
        return self._cast_floats(dtypes.float16)

    def bfloat16(self) -> Module:
        return self._cast_floats(dtypes.bfloat16)

    def cpu(self) -> Module:
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None) -> Module:
        return self._apply(lambda t: t.cuda(device))

    # ---- calling ------------------------------------------------------------------------

    def register_forward_pre_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """hook(module, args) (with_kwargs: hook(module, args, kwargs)) before forward; a
        result other than None replaces the arguments."""
        return self._register(self._forward_pre_hooks, hook, prepend, with_kwargs)

    def register_forward_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """hook(module, args, output) (with_kwargs: hook(module, args, kwargs, output))
        after forward; a result other than None replaces the output."""
        return self._register(self._forward_hooks, hook, prepend, with_kwargs)

    def _register(self, table: dict, hook: Callable, prepend: bool, with_kwargs: bool):
        handle = RemovableHandle(table, self._hooks_with_kwargs)
        table[handle.id] = hook
        if prepend:
            entries = list(table.items())
            table.clear()
            table.update([entries[-1], *entries[:-1]])
        if with_kwargs:
            self._hooks_with_kwargs[handle.id] = True
        return handle

    def compile(self, *args, **kwargs) -> None:
        """Compile this module in place (torch's Module.compile): its forward becomes
        kael.compile(forward, ...) with the same arguments; hooks still run around it."""
        from kael.frontend.compiled import compile as compile_function  # it imports kael.nn

        forward = type(self).forward.__get__(self)
        object.__setattr__(self, "forward", compile_function(forward, *args, **kwargs))
        object.__setattr__(self, "_compile_args", (args, kwargs))

    def __getstate__(self) -> dict:
        """The attributes, less a compile()d forward (rebuilt by __setstate__)."""
        state = dict(self.__dict__)
        if "_compile_args" in state:
            state.pop("forward", None)
        return state

    def __call__(self, *args, **kwargs):
        if _trace_state.trace is not None:
            self._read_by_trace()
        if not (self._forward_pre_hooks or self._forward_hooks):
            return self.forward(*args, **kwargs)
        for key, hook in list(self._forward_pre_hooks.items()):
            if key in self._hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise TypeError(
                            "forward pre-hook must return None or a tuple of (new_args, "
                            f"new_kwargs), but got {result}."
                        )
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        output = self.forward(*args, **kwargs)
        for key, hook in list(self._forward_hooks.items()):
            if key in self._hooks_with_kwargs:
                result = hook(self, args, kwargs, output)
            else:
                result = hook(self, args, output)
            if result is not None:
                output = result
        return output

    # ---- printing -----------------------------------------------------------------------

    def extra_repr(self) -> str:
        """The settings shown between the parentheses of this module's repr."""
        return ""

    def __repr__(self) -> str:
        lines = [line for line in self.extra_repr().split("\n") if line]
        for name, module in self._modules.items():
            lines.append(f"({name}): " + add_indent(repr(module), 2))
        head = type(self).__name__ + "("
        if not self._modules and len(lines) <= 1:
            return head + "".join(lines) + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"
