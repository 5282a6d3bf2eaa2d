"""torch.func.vmap: a function of one example mapped over a batch dimension of its inputs.

kael has no batching rules, so vmap loops: it calls `func` once per index of the batch
(each mapped input with that index selected out of its in_dim, a view) and stacks the
outputs along out_dims, as torch's own fallback does for an op without a batching rule.
That is correct for every kael op and traces into a plan under kael.compile; it costs a
call of `func` per example. chunk_size only changes how many slices are stacked at a time.

Checks and messages are torch's (vmap.py), with these deviations, all where a loop sees
more than torch's one batched call:
- a dict in in_dims or out_dims is matched to the inputs or outputs by key (torch 2.13
  pairs dict entries by position when the key orders differ);
- an output with out_dim None must be the same in every slice (the same object, or the
  same dtype, shape and values, NaN equal to NaN): torch refuses any output computed
  from a mapped input, even a constant one, and under kael.compile only the same object
  passes (comparing values reads them);
- `func` may read values in Python (item, bool) and write in place into unmapped inputs,
  slice by slice, where torch refuses;
- a batch of size 0 runs `func` on one stand-in slice to learn its outputs' trees, shapes
  and dtypes (torch runs its ops on the empty batch; it asserts with a chunk_size): zeros,
  else, where `func` raises a kael.Error on them, identity matrices (ones below 2 dims),
  else ones, so that a function refusing zeros (inv, cholesky, multinomial, an integer
  divisor) still returns its empty result; the zeros' error is raised when `func` takes
  none. In-place writes into unmapped inputs happen once per stand-in tried, and
  'different' randomness draws nothing from the generator, as torch's empty batch.
randomness is a mode of kael.frontend.tracing.reserve while `func` runs: 'error' refuses a
draw, 'different' draws anew per slice, 'same' hands every slice the first slice's
counters (traced too), leaving the generator as after one slice. Under kael.compile,
'same' refuses a random op that runs as an extern step (its own generator, randperm): the
plan would run it outside vmap, drawing anew per slice. multinomial (eager) and a
compiled function's replayed plan ask the mode too; a compiled function that retraces
inside vmap (a slice of another layout) draws at trace time, so 'same' does not reach
those draws.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kael.frontend import factories, pytree, tracing
from kael.frontend.ops import FUNCTIONS
from kael.frontend.random import default_generator
from kael.frontend.tensor import Tensor
from kael.runtime.errors import Error, TypeError, ValueError

__all__ = ["vmap"]

RANDOMNESS = ("error", "different", "same")
STACK, CAT = FUNCTIONS["stack"], FUNCTIONS["cat"]  # the public ops: traced under compile
_RANDOM_IN_ERROR_MODE = (
    "vmap: called random operation while in randomness error mode. Please either use the "
    "'same' or 'different' randomness flags on vmap or perform the randomness operation out "
    "of vmap"
)


def vmap(
    func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
    chunk_size: int | None = None,
) -> Callable:  # fmt: skip
    """`func` mapped over dimension in_dims of its inputs (an int, or a tuple tree matching
    the positional arguments, None for an unmapped one; keyword arguments are never
    mapped), its outputs stacked along out_dims; randomness: 'error', 'different' or 'same'."""
    if randomness not in RANDOMNESS:
        raise Error(
            "Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )
    if chunk_size is not None and not isinstance(chunk_size, int):
        raise TypeError(f"vmap: chunk_size should be None or an int, got {type(chunk_size)}")
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def mapped(*args, **kwargs):
        return _Vmap(func, in_dims, out_dims, randomness, chunk_size).run(args, kwargs)

    return mapped


def _name(func) -> str:
    """How torch's messages name `func`."""
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


# ---- trees of dims ----------------------------------------------------------------------------


def _is_node(tree) -> bool:
    """A container in kael's pytrees (frontend/pytree.py): list, tuple (named too), dict."""
    kind = type(tree)
    return kind is list or kind is dict or isinstance(tree, tuple)


def _children(tree) -> list:
    return list(tree.values()) if type(tree) is dict else list(tree)


def _broadcast(prefix, tree, out: list) -> bool:
    """Append, per leaf of `tree`, the leaf of `prefix` above it (a leaf of prefix stands
    for a whole subtree); False where prefix is not a prefix of tree's structure."""
    if not _is_node(prefix):
        out.extend([prefix] * len(pytree.flatten(tree)[0]))
        return True
    if type(prefix) is not type(tree):
        return False
    if type(tree) is dict:
        if prefix.keys() != tree.keys():
            return False
        return all(_broadcast(prefix[key], value, out) for key, value in tree.items())
    if len(prefix) != len(tree):
        return False
    return all(_broadcast(p, t, out) for p, t in zip(prefix, tree))


def _structure(tree, indent: int = 0) -> str:
    """A tree's structure as torch's TreeSpec prints it ('*' for a leaf)."""
    if not _is_node(tree):
        return "*"
    kind = type(tree)
    if kind is dict:
        head = f"TreeSpec(dict, {list(tree)}, ["
    elif hasattr(kind, "_fields"):
        head = f"TreeSpec(namedtuple, {kind}, ["
    else:
        head = f"TreeSpec({kind.__name__}, None, ["
    children = [_structure(child, indent + 2) for child in _children(tree)]
    return head + (",\n" + " " * (indent + 2)).join(children) + "])"


# ---- randomness -------------------------------------------------------------------------------


def _refuse(count: int, generator) -> tuple[int, int]:
    raise Error(_RANDOM_IN_ERROR_MODE)


def _no_draws(count: int, generator) -> tuple[int, int]:
    """Words for a stand-in slice of an empty batch, whose draws torch never makes."""
    return 0, 0


class _Draws:
    """One vmap call's randomness mode, put in tracing.reserve while a slice runs: an
    outer vmap's mode stays beneath it ('different' is that mode itself, drawing nothing
    for the stand-in slices of an empty batch)."""

    def __init__(self, randomness: str, empty: bool = False) -> None:
        self.below = tracing.random_hook.reserve
        self.trace = tracing.active()  # a kael.compile tracing this vmap
        different = _no_draws if empty else self.below
        self.hook = {"error": _refuse, "different": different, "same": self._same}[randomness]
        self.first: list[tuple[tuple, tuple]] = []  # (key, words) the first slice drew
        self.replaying = False
        self.position = 0

    def call(self, func: Callable, args: tuple, kwargs: dict):
        """func(*args, **kwargs) as one slice, under this mode."""
        self.position = 0
        hook = tracing.random_hook
        hook.reserve = self.hook
        try:
            return func(*args, **kwargs)
        finally:
            hook.reserve = self.below
            self.replaying = True

    def _same(self, count: int, generator) -> tuple:
        trace = tracing.active()
        if self.trace is not None and trace is None and self.trace.broken is None:
            raise Error(
                "vmap(randomness='same') under kael.compile: a random op that runs outside "
                "the plan (one with its own generator, or with host work such as randperm) "
                "would draw anew for each slice at every call; draw it outside vmap or use "
                "randomness='different'"
            )
        generator = generator or default_generator
        key = (count, generator, trace)
        if self.replaying:
            if self.position < len(self.first) and self.first[self.position][0] == key:
                self.position += 1
                return self.first[self.position - 1][1]
            return (self.below or tracing.fresh_reserve)(count, generator)
        words = (self.below or tracing.fresh_reserve)(count, generator)
        self.first.append((key, words))
        return words


# ---- the map ----------------------------------------------------------------------------------


_NONE = object()  # no slice ran yet


class _Vmap:
    """One call of a vmapped function: its checked inputs, the loop, the stacked outputs."""

    def __init__(self, func, in_dims, out_dims, randomness: str, chunk_size) -> None:
        self.func, self.name = func, _name(func)
        self.in_dims, self.out_dims = in_dims, out_dims
        self.randomness, self.chunk_size = randomness, chunk_size
        self.first: Any = _NONE  # the first slice's output
        self.out_def: tuple = ()
        self.out_leaf_dims: list = []

    def run(self, args: tuple, kwargs: dict):
        """The outputs of func over every slice of args, joined along out_dims."""
        self._check_out_dims()
        leaves, treedef = pytree.flatten(args)
        dims = self._flat_in_dims(args, leaves)
        size = self._batch_size(dims, leaves)
        if size == 0:  # no slice to run: a stand-in tells the outputs' trees and shapes
            out = self._stand_in_leaves(leaves, dims, treedef, kwargs)
            return pytree.unflatten(self.out_def, self._joined([out], _empty))
        draws = _Draws(self.randomness)
        chunks = []
        step = self.chunk_size or size
        for start in range(0, size, step):
            outs = []
            for i in range(start, min(start + step, size)):
                sliced = [leaf if d is None else leaf.select(d, i) for leaf, d in zip(leaves, dims)]
                out = draws.call(self.func, pytree.unflatten(treedef, sliced), kwargs)
                outs.append(self._leaves(out))
            chunks.append(self._joined(outs, STACK))
        return pytree.unflatten(self.out_def, self._joined(chunks, _cat))

    def _stand_in_leaves(self, leaves: list, dims: list, treedef, kwargs: dict) -> list:
        """The output leaves of func on the first stand-in slice (_STAND_INS) it accepts;
        the zeros' error when it accepts none (a shape error, which every slice raises)."""
        draws = _Draws(self.randomness, empty=True)
        failure = None
        for fill in _STAND_INS:
            stand_in = [_stand_in(fill, leaf, d) for leaf, d in zip(leaves, dims)]
            try:
                out = draws.call(self.func, pytree.unflatten(treedef, stand_in), kwargs)
            except Error as error:
                failure = failure or error
                continue
            return self._leaves(out)
        raise failure

    # ---- inputs ----

    def _flat_in_dims(self, args: tuple, leaves: list) -> list:
        """in_dims per leaf of args, checked as torch checks them; negatives made positive."""
        where = f"vmap({self.name}, in_dims={self.in_dims}, ...)(<inputs>)"
        if not isinstance(self.in_dims, int | tuple):
            raise ValueError(
                f"{where}: expected `in_dims` to be int or a (potentially nested) tuple "
                f"matching the structure of inputs, got: {type(self.in_dims)}."
            )
        if not args:
            raise ValueError(
                f"vmap({self.name})(<inputs>): got no inputs. Maybe you forgot to add inputs, "
                "or you are trying to vmap over a function with no inputs. The latter is "
                "unsupported."
            )
        dims: list = []
        if not _broadcast(self.in_dims, args, dims):
            raise ValueError(
                f"{where}: in_dims is not compatible with the structure of `inputs`. in_dims "
                f"has structure {_structure(self.in_dims)} but inputs has structure "
                f"{_structure(args)}."
            )
        for i, (leaf, d) in enumerate(zip(leaves, dims)):
            if d is None:
                continue
            if not isinstance(d, int):
                raise ValueError(
                    f"{where}: Got in_dim={d} for an input but in_dim must be either an "
                    "integer dimension or None."
                )
            if not isinstance(leaf, Tensor):
                raise ValueError(
                    f"{where}: Got in_dim={d} for an input but the input is of type "
                    f"{type(leaf)}. We cannot vmap over non-Tensor arguments, please use "
                    "None as the respective in_dim"
                )
            n = leaf.dim()
            if not -n <= d < n:
                raise ValueError(
                    f"{where}: Got in_dim={d} for some input, but that input is a Tensor of "
                    f"dimensionality {n} so expected in_dim to satisfy -{n} <= in_dim < {n}."
                )
            dims[i] = d % n
        return dims

    @staticmethod
    def _batch_size(dims: list, leaves: list) -> int:
        sizes = [leaf.size(d) for leaf, d in zip(leaves, dims) if d is not None]
        if not sizes:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        if any(s != sizes[0] for s in sizes):
            raise ValueError(
                "vmap: Expected all tensors to have the same size in the mapped dimension, "
                f"got sizes {sizes} for the mapped dimension"
            )
        return sizes[0]

    # ---- outputs ----

    def _check_out_dims(self) -> None:
        if any(d is not None and not isinstance(d, int) for d in pytree.flatten(self.out_dims)[0]):
            raise ValueError(
                f"vmap({self.name}, ..., out_dims={self.out_dims}): `out_dims` must be an "
                "int, None or a python collection of ints representing where in the outputs "
                "the vmapped dimension should appear."
            )

    def _outputs(self, out) -> tuple[list, tuple, list]:
        """(out's leaves, its tree, out_dims per leaf), checked as torch checks them."""
        leaves, treedef = pytree.flatten(out)
        dims: list = []
        if isinstance(out, Tensor):
            fits = isinstance(self.out_dims, int) or self.out_dims is None
            if fits or (isinstance(self.out_dims, tuple) and len(self.out_dims) == 1):
                dims = [self.out_dims] if fits else list(self.out_dims)
        elif not _broadcast(self.out_dims, out, dims):
            dims = []
        if len(dims) != len(leaves):
            raise ValueError(
                f"vmap({self.name}, ..., out_dims={self.out_dims})(<inputs>): out_dims is not "
                "compatible with the structure of `outputs`. out_dims has structure "
                f"{_structure(self.out_dims)} but outputs has structure {_structure(out)}."
            )
        for leaf, d in zip(leaves, dims):
            if d is not None and not isinstance(leaf, Tensor):
                raise ValueError(
                    f"vmap({self.name}, ...): `{self.name}` must only return Tensors, got "
                    f"type {type(leaf)}. Did you mean to set out_dims= to None for output?"
                )
        return leaves, treedef, dims

    def _leaves(self, out) -> list:
        """One slice's output leaves; the first slice's output sets the tree and out_dims
        that every other slice's must have."""
        if self.first is _NONE:
            self.first = out
            leaves, self.out_def, self.out_leaf_dims = self._outputs(out)
            return leaves
        leaves, treedef = pytree.flatten(out)
        if treedef != self.out_def:
            raise ValueError(
                f"vmap({self.name}, ...): `{self.name}` returned outputs of structure "
                f"{_structure(out)} for one example and {_structure(self.first)} for another"
            )
        return leaves

    def _joined(self, parts: list[list], join: Callable) -> list:
        """Per output leaf, its values over `parts` (slices or chunks) joined along its
        out_dim by `join`; an out_dim None leaf is the one value they all share."""
        return [
            self._unbatched([p[j] for p in parts])
            if d is None
            else join([p[j] for p in parts], dim=d)
            for j, d in enumerate(self.out_leaf_dims)
        ]

    def _unbatched(self, values: list):
        """An out_dim None output: the same in every slice, else torch's refusal."""
        first = values[0]
        if all(v is first or _same_value(first, v) for v in values[1:]):
            return first
        raise ValueError(
            f"vmap({self.name}, ...): `{self.name}` can not return a BatchedTensor when "
            "out_dim is None"
        )


def _same_value(a, b) -> bool:
    """a and b the same value: tensors of one dtype, shape and elements, NaN equal to NaN."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        if a.dtype is not b.dtype or a.shape != b.shape:
            return False
        return bool((a.eq(b) | (a.isnan() & b.isnan())).all())
    return not isinstance(a, Tensor) and not isinstance(b, Tensor) and a == b


def _cat(parts: list, dim: int):
    return parts[0] if len(parts) == 1 else CAT(parts, dim=dim)


def _empty(parts: list, dim: int):
    """A batch of none of `parts`' one stand-in slice."""
    return STACK(parts, dim=dim).narrow(dim, 0, 0)


def _identities(shape: tuple, dtype, device) -> Tensor:
    """Identity matrices over the last two dims of `shape` (ones when it has fewer)."""
    if len(shape) < 2:
        return factories.ones(shape, dtype=dtype, device=device)
    eye = factories.eye(shape[-2], shape[-1], dtype=dtype, device=device)
    return eye.expand(shape).contiguous()


# What an empty batch hands func for a slice, in the order tried: zeros (indices in range),
# identity matrices (invertible, positive-definite, rows that are distributions), ones
# (nonzero divisors).
_STAND_INS = (factories.zeros, _identities, factories.ones)


def _stand_in(fill: Callable, leaf, dim):
    """A stand-in made by `fill` for one slice of `leaf` (a batch of size 0 has none)."""
    if dim is None:
        return leaf
    shape = leaf.shape[:dim] + leaf.shape[dim + 1 :]
    return fill(shape, dtype=leaf.dtype, device=leaf.device)
