"""nn.Module: PyTorch's container of parameters, buffers and submodules, for inference.

Assigning a Parameter, a Buffer, a Module (or None to a name already registered as one)
registers it by name, in order; state_dict() and load_state_dict() use PyTorch's keys
("layer.0.weight"), so a torch checkpoint's state dict (torch tensors, NumPy arrays or
kael tensors) loads into the same architecture written with kael.nn. Calling a module runs
its forward pre-hooks, forward() and forward hooks (an always_call hook also when they
raise). state_dict() and load_state_dict() call each module's _save_to_state_dict and
_load_from_state_dict (overridable, torch's signatures) with torch's hooks around them, and
carry get_extra_state() as "<prefix>_extra_state". kael has no autograd: train()/eval()
switch what dropout and batch norm do, and nothing records gradients.

Deviation: load_state_dict(assign=True) does not write "assign_to_params_buffers" into the
caller's state_dict._metadata (torch's does, as a side effect); each module gets a copy.
"""

from __future__ import annotations

import functools
import itertools
import types
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from typing import Any

from kael.frontend.factories import empty_like
from kael.frontend.memory_formats import format_arg
from kael.frontend.tensor import Tensor, to_arguments
from kael.nn.modules.state import (
    _IncompatibleKeys,
    as_state_tensor,
    load_tree,
    quoted,
    type_name,
    with_metadata,
)
from kael.nn.parameter import Buffer, Parameter, UninitializedBuffer
from kael.runtime import dtypes, user_warning
from kael.runtime.dtypes import as_dtype
from kael.runtime.errors import AttributeError, Error, KeyError, TypeError, ValueError
from kael.runtime.tracestate import bump_module_epoch
from kael.runtime.tracestate import state as _trace_state

_hook_ids = itertools.count()


IncompatibleKeys = _IncompatibleKeys  # kael's earlier public name

_EXTRA_STATE = "_extra_state"  # the state_dict key suffix of get_extra_state()'s value


def _overrides(module: Module, method: str) -> bool:
    """Whether the module's class defines its own `method` (get_extra_state, ...)."""
    return getattr(type(module), method) is not getattr(Module, method)


class RemovableHandle:
    """What register_*_hook returns: remove() (or leaving a with block) drops the hook;
    dropping a forward hook of `owner` (held weakly) tells its compiled callers."""

    def __init__(self, *tables: dict, owner: Module | None = None) -> None:
        self.id = next(_hook_ids)
        self._tables = tables
        self._owner = None if owner is None else weakref.ref(owner)

    def remove(self) -> None:
        for table in self._tables:
            table.pop(self.id, None)
        owner = None if self._owner is None else self._owner()
        if owner is not None:
            owner._changed("removes a forward hook")

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


def add_indent(text: str, spaces: int, indent_blank: bool = False) -> str:
    """text's lines after the first indented by `spaces`; blank ones left empty, as torch's
    Module repr leaves them (ModuleList's repr indents them too: indent_blank)."""
    first, *rest = text.split("\n")
    pad = " " * spaces
    return "\n".join(
        [first] + [pad + line if indent_blank or line.strip() else "" for line in rest]
    )


# Every module's tables, each made empty by its factory.
_TABLES: dict[str, Callable[[], Any]] = {
    "_parameters": dict,
    "_buffers": dict,
    "_non_persistent_buffers_set": set,
    "_modules": dict,
    "_forward_pre_hooks": dict,
    "_forward_hooks": dict,
    "_hooks_with_kwargs": dict,
    "_forward_hooks_always_called": dict,
    "_state_dict_pre_hooks": dict,
    "_state_dict_hooks": dict,
    "_load_state_dict_pre_hooks": dict,
    "_load_state_dict_post_hooks": dict,
}


# Of a fingerprint's items, this many from each end (a long list: its length and ends).
_FINGERPRINT_ENDS = 32


def _fingerprint(value) -> tuple | None:
    """What a forward's in-place change of `value` would change: a container's length and
    the identities of its items (or keys and values; the ends of a long one), a plain
    object's attributes likewise; None for a value not followed (a tensor, a module, a
    number, a function, kael's own objects)."""
    kind = type(value)
    if kind is list or kind is deque:
        items = [id(v) for v in value]
    elif isinstance(value, dict):
        items = [(id(k), id(v)) for k, v in value.items()]
    elif kind is set:
        return (len(value),)
    elif _plain_object(value):
        items = [(k, id(v)) for k, v in vars(value).items()]
    else:
        return None
    count, ends = len(items), _FINGERPRINT_ENDS
    if count > 2 * ends:
        items = items[:ends] + items[-ends:]
    return (kind, count, tuple(items))


def _plain_object(value) -> bool:
    """A user's object with attributes of its own: not a tensor, a module, a class, a
    function or a Python module, and not kael's (a generator, a distribution)."""
    kind = type(value)
    if not hasattr(value, "__dict__") or isinstance(value, Tensor | Module | type):
        return False
    if isinstance(value, types.FunctionType | types.MethodType | types.ModuleType):
        return False
    return not (kind.__module__ or "").startswith("kael")


_ABSENT = object()  # Module.__setattr__'s: no such instance attribute


class Module:
    """Base class of every layer: subclasses set their state in __init__ and define forward."""

    training: bool
    _version: int = 1  # state_dict()'s metadata version of this class's entries

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        for name, make in _TABLES.items():
            object.__setattr__(self, name, make())
        if _trace_state.trace is not None:  # built by a traced call: its own to set up
            _trace_state.trace.build(self)

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
        self._changed(f"sets '{name}'")

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
        self._changed(f"sets '{name}'")

    def add_module(self, name: str, module: Module | None) -> None:
        """Enter `module` as submodule `name` (its state's keys start with "name.")."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type_name(module)} is not a Module subclass")
        _check_name(name, "module", self)
        self._modules[name] = module
        self._changed(f"sets '{name}'")

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params, buffers, modules = (d.get(k) for k in ("_parameters", "_buffers", "_modules"))
        held = d.get(name, _ABSENT)  # the object it holds already: nothing moves (a
        if held is value:  # forward's `self.freqs = self.freqs.to(x.device)`, Meta's llama)
            return
        if held is _ABSENT and params is not None:
            for table in (params, buffers, modules):
                if name in table:
                    if table[name] is value:
                        return
                    break
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
            self._changed(f"sets '{name}'")
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            modules[name] = value
            self._changed(f"sets '{name}'")
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type_name(value)}' as child module '{name}' "
                    "(kael.nn.Module or None expected)"
                )
            modules[name] = None
            self._changed(f"sets '{name}'")
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
                self._changed(f"sets '{name}'")
        else:
            object.__setattr__(self, name, value)
            if params is not None:  # a setting (eps, p) a compiled forward read as a constant
                self._changed(f"sets '{name}'")

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
        or settings makes the functions that read it trace again (its `_state_version` and
        tracestate.epoch). Modules no trace has read (being built, say) change
        without making anything trace again."""
        object.__setattr__(self, "_in_a_plan", True)
        _trace_state.trace.read_module(self)

    def _held_values(self) -> dict[str, tuple]:
        """A fingerprint of each plain Python value this module holds that a forward could
        change in place (a list, dict, set or deque, or a plain object's attributes): what
        a traced call did to them, a plan would not repeat (Tracing compares them)."""
        held = {}
        for name, value in self.__dict__.items():
            if name not in _OWN_NAMES:
                mark = _fingerprint(value)
                if mark is not None:
                    held[name] = mark
        return held

    def _changed(self, what: str = "changes the state") -> None:
        """This module's state or settings moved (`what` did: "sets 'eps'"): plans that read
        it must not replay, and a traced call doing it is a side effect its plan would not
        repeat."""
        trace = _trace_state.trace
        if trace is not None:
            trace.module_side_effect(self, what)
        d = self.__dict__
        if d.get("_in_a_plan"):
            d["_state_version"] = d.get("_state_version", 0) + 1
            bump_module_epoch()

    def __delattr__(self, name: str) -> None:
        for table in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__[table]:
                del self.__dict__[table][name]
                self._non_persistent_buffers_set.discard(name)
                self._changed(f"deletes '{name}'")
                return
        object.__delattr__(self, name)
        self._changed(f"deletes '{name}'")

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
            if _trace_state.trace is not None:  # a traced call reads its tensors this way too
                owner._read_by_trace()
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
            if not hasattr(module, atom):
                raise AttributeError(f"{module._get_name()} has no attribute `{atom}`")
            module = getattr(module, atom)
            if not isinstance(module, Module):
                raise AttributeError(f"`{atom}` is not an nn.Module")
        return module

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put `module` at a dotted path whose parent exists, replacing a submodule there
        (strict: only replacing one)."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        path, _, name = target.rpartition(".")
        parent = self.get_submodule(path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def _owner_and_name(self, target: str) -> tuple[Module, str]:
        """The module holding the attribute at a dotted path, and the attribute's name,
        which that module must have."""
        path, _, name = target.rpartition(".")
        owner = self.get_submodule(path)
        if not hasattr(owner, name):
            raise AttributeError(f"{owner._get_name()} has no attribute `{name}`")
        return owner, name

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path ("block.fc.weight")."""
        owner, name = self._owner_and_name(target)
        param = getattr(owner, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path ("block.norm.running_mean")."""
        owner, name = self._owner_and_name(target)
        if name not in owner._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return owner._buffers[name]

    # ---- state --------------------------------------------------------------------------

    def get_extra_state(self) -> Any:
        """Override (with set_extra_state) to put a value other than the parameters and
        buffers in state_dict(), under "<prefix>_extra_state"."""
        raise Error("Module.get_extra_state() is only called where a subclass overrides it")

    def set_extra_state(self, state: Any) -> None:
        """Override (with get_extra_state) to take back the "_extra_state" entry."""
        raise Error("Module.set_extra_state() is only called where a subclass overrides it")

    def _local_state(self) -> dict[str, Tensor]:
        if _trace_state.trace is not None:  # state_dict() in a traced call reads the module
            self._read_by_trace()
        state = {k: v for k, v in self._parameters.items() if v is not None}
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                state[name] = buffer
        return state

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        """Put this module's own entries (not its children's) in `destination`."""
        for name, value in self._local_state().items():
            keep = keep_vars or type(value) is Tensor
            destination[prefix + name] = value if keep else Tensor(value._impl)
        if _overrides(self, "get_extra_state"):
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()

    def state_dict(
        self, *args, destination=None, prefix: str = "", keep_vars: bool = False
    ) -> OrderedDict:
        """Every parameter and persistent buffer by dotted key, as plain tensors over the
        module's own elements (keep_vars: the Parameter objects themselves), with torch's
        _metadata (each module's version) and state-dict hooks."""
        if args:  # PyTorch's deprecated positional form
            user_warning.warn(
                "Positional args are being deprecated, use kwargs instead. Refer to "
                "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                "#torch.nn.Module.state_dict for details.",
                FutureWarning,
            )
            destination = args[0] if destination is None else destination
            prefix = args[1] if len(args) > 1 and prefix == "" else prefix
            keep_vars = args[2] if len(args) > 2 and keep_vars is False else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in list(self._state_dict_pre_hooks.values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=f"{prefix}{name}.", keep_vars=keep_vars
                )
        for hook in list(self._state_dict_hooks.values()):
            result = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if result is not None:
                    raise Error("state_dict post-hook must return None")
            elif result is not None:  # the private hook's result replaces the dict
                destination = result
        return destination

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """hook(module, prefix, keep_vars) before this module's state_dict() collects."""
        return self._hook_into(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """hook(module, state_dict, prefix, local_metadata) after state_dict(): it may change
        the dict in place and must return None."""
        hook._from_public_api = True  # torch's mark: its result must be None
        return self._hook_into(self._state_dict_hooks, hook)

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """torch's older post-hook: a result other than None replaces the dict (at the
        module state_dict() was called on)."""
        if getattr(hook, "_from_public_api", False):
            raise Error(
                "Cannot register the same function as the state dict post hook that was "
                "previously registered via register_state_dict_post_hook"
            )
        return self._hook_into(self._state_dict_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs) before this module loads its entries."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(
        self, hook: Callable, with_module: bool = False
    ) -> RemovableHandle:
        """register_load_state_dict_pre_hook, the module left out of the hook's arguments
        unless `with_module`."""
        return self._hook_into(
            self._load_state_dict_pre_hooks, functools.partial(hook, self) if with_module else hook
        )

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """hook(module, incompatible_keys) after this module and its children loaded; it may
        change the key lists in place (strict loading then reads them) and must return None."""
        return self._hook_into(self._load_state_dict_post_hooks, hook)

    def _hook_into(self, table: dict, hook: Callable) -> RemovableHandle:
        handle = RemovableHandle(table)
        table[handle.id] = hook
        return handle

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy each entry into the parameter or buffer of its key (converted to its dtype
        and device), module by module through _load_from_state_dict, as PyTorch does: a
        shape mismatch is an error; with `strict`, so are missing and unexpected keys.
        `assign` puts the checkpoint's tensors in instead (a Parameter keeps its
        requires_grad)."""
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type_name(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        problems: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = with_metadata(OrderedDict(state_dict), metadata)
        load_tree(self, state_dict, "", metadata, assign, (missing, unexpected, problems))
        if strict:
            if unexpected:
                problems.insert(0, f"Unexpected key(s) in state_dict: {quoted(unexpected)}. ")
            if missing:
                problems.insert(0, f"Missing key(s) in state_dict: {quoted(missing)}. ")
        if problems:
            raise Error(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                + "\n\t".join(problems)
            )
        return _IncompatibleKeys(missing, unexpected)

    def _load_from_state_dict(
        self,
        state_dict,
        prefix: str,
        local_metadata: dict,
        strict: bool,
        missing_keys: list,
        unexpected_keys: list,
        error_msgs: list,
    ) -> None:
        """Load this module's own entries (keys `prefix` + name), after its load pre-hooks;
        override it to rename or upgrade an older checkpoint's keys (state_dict is this
        call's own copy). With `strict`, missing and unexpected keys go to their lists."""
        for hook in list(self._load_state_dict_pre_hooks.values()):
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)  # fmt: skip
        assign = local_metadata.get("assign_to_params_buffers", False)
        missing, unexpected, problems = self._load_local(state_dict, prefix, assign)
        error_msgs.extend(problems)
        if strict:
            missing_keys.extend(missing)
            unexpected_keys.extend(unexpected)

    def _load_local(self, state_dict, prefix: str, assign: bool) -> tuple[list, list, list]:
        """_load_from_state_dict's work: (missing keys, unexpected keys under `prefix`,
        problems), as PyTorch finds them. A dotted key must name a child; a bare one a
        parameter or persistent buffer."""
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
            problem = self._load_entry(name, key, current, entry, assign)
            if problem is not None:
                problems.append(problem)
        extra_key = prefix + _EXTRA_STATE
        unexpected = []
        if _overrides(self, "set_extra_state"):
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            else:
                missing.append(extra_key)
        elif extra_key in state_dict:
            unexpected.append(extra_key)
        for key in state_dict:
            if key.startswith(prefix) and key != extra_key:
                head, dotted, _ = key[len(prefix) :].partition(".")
                if head not in (self._modules if dotted else local):
                    unexpected.append(key)
        return missing, unexpected, problems

    def _load_entry(self, name: str, key: str, current: Tensor, entry, assign: bool):
        """Load one checkpoint entry into `current` (or in its place, `assign`); the problem
        as torch words it, or None."""
        try:
            value = as_state_tensor(entry)
        except (Error, TypeError) as e:
            return f'While copying the parameter named "{key}", {e}'
        if not current.shape and value.shape == (1,):  # a 0-d parameter saved as 1-d
            value = value[0]
        if value.shape != current.shape:
            return (
                f"size mismatch for {key}: copying a param with shape {list(value.shape)} "
                f"from checkpoint, the shape in current model is {list(current.shape)}."
            )
        try:
            if not assign:
                current.copy_(value)
                return None
            if isinstance(current, Parameter):
                if isinstance(value, Parameter):  # torch keeps the given Parameter itself
                    value.requires_grad_(current.requires_grad)
                else:
                    value = Parameter(value, requires_grad=current.requires_grad)
            setattr(self, name, value)
        except Exception as e:  # torch reports whatever the copy raised, with the rest
            return (
                f'While copying the parameter named "{key}", whose dimensions in the model '
                f"are {current.size()} and whose dimensions in the checkpoint are "
                f"{value.size()}, an exception occurred : {e.args}."
            )
        return None

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
        # a compiled forward traced in the other mode traces again
        self._changed("switches train/eval")
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

    def _apply(self, convert: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        """Replace each parameter's and buffer's elements by convert(tensor), keeping the
        Parameter objects (PyTorch's param.data = ...) and a lazy module's uninitialized
        buffers, which then materialize with the converted dtype and device (as torch's);
        `recurse`: the submodules' too."""
        for module in self.modules() if recurse else (self,):
            for param in module._parameters.values():
                if param is not None:
                    param.data = convert(param)
            for name, buffer in module._buffers.items():
                if isinstance(buffer, UninitializedBuffer):
                    buffer.data = convert(buffer)
                elif buffer is not None:
                    module._buffers[name] = convert(buffer)
        self._changed("converts the tensors")
        return self

    def to(
        self, *args, dtype=None, device=None, non_blocking: bool = False, memory_format=None
    ) -> Module:
        """Tensor.to's arguments (a device, a dtype, a tensor for both; memory_format by
        keyword): floating and complex parameters and buffers take the dtype (a complex one
        to a real dtype drops its imaginary part, warning as Tensor.to), every one the
        device, the 4-d and 5-d ones the memory format; returns self."""
        dtype, device, non_blocking, _ = to_arguments(args, dtype, device, non_blocking)
        dtype = None if dtype is None else as_dtype(dtype)
        layout = format_arg(memory_format, "to", optional=True)
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(
                "nn.Module.to only accepts floating point or complex dtypes, but got desired "
                f"dtype={dtype}"
            )
        if dtype is not None and dtype.is_complex:
            user_warning.warn(
                "Complex modules are a new feature under active development whose design may "
                "change, and some modules might not work as expected when using complex tensors "
                "as parameters or buffers."
            )

        def convert(t: Tensor) -> Tensor:
            floating = t.dtype.is_floating_point or t.dtype.is_complex
            return t.to(
                device=device,
                dtype=dtype if floating else None,
                non_blocking=non_blocking,
                memory_format=layout if t.dim() in (4, 5) else None,
            )

        return self._apply(convert)

    def type(self, dst_type) -> Module:
        """Every parameter and buffer (integer ones too) converted by Tensor.type(dst_type):
        a dtype, a legacy type (kael.DoubleTensor) or its name; returns self."""
        return self._apply(lambda t: t.type(dst_type))

    def to_empty(self, *, device, recurse: bool = True) -> Module:
        """Every parameter and buffer replaced by an uninitialized one of its shape and dtype
        on `device` (only this module's own where not `recurse`); returns self."""
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def share_memory(self) -> Module:
        """Move every parameter's and buffer's storage into shared memory (Tensor.
        share_memory_), so forked processes see the same elements; returns self."""
        return self._apply(lambda t: t.share_memory_())

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
        self,
        hook: Callable,
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """hook(module, args, output) (with_kwargs: hook(module, args, kwargs, output))
        after forward; a result other than None replaces the output. An `always_call` hook
        also runs (output None) when forward or a hook before it raises."""
        handle = self._register(self._forward_hooks, hook, prepend, with_kwargs)
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def _register(self, table: dict, hook: Callable, prepend: bool, with_kwargs: bool):
        handle = RemovableHandle(
            table, self._hooks_with_kwargs, self._forward_hooks_always_called, owner=self
        )
        table[handle.id] = hook
        self._changed("registers a forward hook")  # a compiled caller's plan ran without it
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
        trace = _trace_state.trace
        if trace is not None:
            self._read_by_trace()
        if not (self._forward_pre_hooks or self._forward_hooks):
            return self.forward(*args, **kwargs)
        if trace is not None:
            trace.module_side_effect(self, "runs the forward hooks")
        output, called = None, set()
        try:
            for key, hook in list(self._forward_pre_hooks.items()):
                if key in self._hooks_with_kwargs:
                    result = hook(self, args, kwargs)
                    if result is not None:
                        if not (isinstance(result, tuple) and len(result) == 2):
                            raise Error(
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
                called.add(key)
                result = self._forward_hook(key, hook, args, kwargs, output)
                output = output if result is None else result
            return output
        except Exception:
            for key, hook in list(self._forward_hooks.items()):
                if key in self._forward_hooks_always_called and key not in called:
                    try:
                        result = self._forward_hook(key, hook, args, kwargs, output)
                        output = output if result is None else result
                    except Exception as e:
                        user_warning.warn(
                            "module forward hook with ``always_call=True`` raised an exception "
                            f"that was silenced as another error was raised in forward: {e}"
                        )
            raise

    def _forward_hook(self, key: int, hook: Callable, args: tuple, kwargs: dict, output):
        if key in self._hooks_with_kwargs:
            return hook(self, args, kwargs, output)
        return hook(self, args, output)

    # ---- printing -----------------------------------------------------------------------

    def _get_name(self) -> str:
        """The class name the repr starts with."""
        return type(self).__name__

    def extra_repr(self) -> str:
        """The settings shown between the parentheses of this module's repr."""
        return ""

    def __repr__(self) -> str:
        """torch's form: a one-line extra_repr inline; otherwise its lines (blank ones kept)
        then each child's, indented."""
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [
            f"({name}): " + add_indent(repr(module), 2) for name, module in self._modules.items()
        ]
        lines = extra_lines + child_lines
        body = ""
        if len(extra_lines) == 1 and not child_lines:
            body = extra_lines[0]
        elif lines:
            body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"


# The attributes every Module makes for itself (its tables, hooks and flags): no user state.
_OWN_NAMES = frozenset(Module().__dict__) | {"_state_version", "_in_a_plan", "training"}
