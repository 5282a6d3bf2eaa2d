"""torch.func.functional_call: a module run with some of its parameters and buffers
replaced for one call (ensembles, hypernetworks, weights kept outside the module)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from kael.frontend.tensor import Tensor
from kael.runtime.errors import Error, ValueError

__all__ = ["functional_call"]


def _merged(dicts) -> dict:
    if isinstance(dicts, dict):
        return dict(dicts)
    merged: dict = {}
    for d in dicts:
        for key, value in d.items():
            if key in merged:
                raise ValueError(
                    f"{key} appeared in multiple dictionaries; behavior of functional call is"
                    " ambiguous"
                )
            merged[key] = value
    return merged


def _slot(module, name: str):
    """(the table holding `name`'s tensor: a submodule's _parameters, _buffers or
    __dict__, and its key)."""
    *path, attr = name.split(".")
    owner = module
    for part in path:
        owner = owner._modules[part] if part in owner._modules else getattr(owner, part)
    for table in (owner._parameters, owner._buffers):
        if attr in table:
            return table, attr
    return owner.__dict__, attr


@contextlib.contextmanager
def _swapped(module, values: dict) -> Iterator[None]:
    saved = []
    try:
        for name, value in values.items():
            table, key = _slot(module, name)
            saved.append((table, key, table.get(key, _MISSING)))
            table[key] = value
        yield
    finally:
        for table, key, old in reversed(saved):
            if old is _MISSING:
                table.pop(key, None)
            else:
                table[key] = old


_MISSING = object()


def _untied(state: dict, values: dict) -> dict:
    """`values` with every name tied to a given one (one tensor under several names) given
    that tensor too, as torch's _untie_named_tensors_map; ValueError where tied names are
    given different tensors, which one call could not honour."""
    tied: dict[int, list[str]] = {}
    for name, tensor in state.items():
        tied.setdefault(id(tensor), []).append(name)
    untied = dict(values)
    for names in tied.values():
        given = {id(values[n]): values[n] for n in names if n in values}
        if len(given) > 1:
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(names)}, which are tied."
                " Consider using tie_weights=False"
            )
        for value in given.values():
            untied.update(dict.fromkeys(names, value))
    return untied


def functional_call(
    module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights: bool = True,
    strict: bool = False,
):  # fmt: skip
    """module(*args, **kwargs) with the named parameters and buffers replaced by the given
    tensors for this call only (dotted names, as in state_dict). tie_weights: a tensor tied
    to a replaced one (the same Parameter under two names) is replaced too. strict: every
    parameter and buffer must be given, and nothing else."""
    values = _merged(parameter_and_buffer_dicts)
    for name, value in values.items():
        if not isinstance(value, Tensor):
            raise ValueError(
                f"functional_call: {name} must be a tensor, got {type(value).__name__}"
            )
    state = dict(module.named_parameters(remove_duplicate=False))
    state.update(module.named_buffers(remove_duplicate=False))
    if tie_weights:
        values = _untied(state, values)
    if strict:
        missing = [n for n in state if n not in values]
        unexpected = [n for n in values if n not in state]
        if missing or unexpected:
            lines = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
            if unexpected:
                lines.append(
                    "\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + "."
                )
            if missing:
                lines.append("\tMissing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
            raise Error("\n".join(lines))
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _swapped(module, values):
        return module(*args, **(kwargs or {}))
