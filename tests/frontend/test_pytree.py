"""kael's pytree against torch's (torch.utils._pytree): which values are nodes, their leaves
in order and their rebuild; and the trees kael.compile takes and returns through it."""

from __future__ import annotations

import collections
import os

import torch
import torch.utils._pytree as torch_pytree

import kael
from kael.frontend import pytree


class Pair(tuple):
    """A tuple subclass whose __new__ takes the items, not one iterable."""

    def __new__(cls, a, b):
        return super().__new__(cls, (a, b))


class Tagged(tuple):
    """A tuple subclass whose instances carry an attribute of their own."""

    def __new__(cls, items, tag):
        self = super().__new__(cls, items)
        self.tag = tag
        return self


Point = collections.namedtuple("Point", ["x", "y"])


def _trees() -> list[tuple]:
    """(kael tree, the torch tree torch's pytree flattens the same way), leaves are ints."""
    return [
        ((1, [2, 3]), (1, [2, 3])),
        (Point(1, (2, 3)), Point(1, (2, 3))),
        (kael.Size([2, 3]), torch.Size([2, 3])),
        ({"b": 1, "a": [2]}, {"b": 1, "a": [2]}),
        (collections.OrderedDict(b=1, a=2), collections.OrderedDict(b=1, a=2)),
        (collections.defaultdict(list, a=1), collections.defaultdict(list, a=1)),
        (collections.deque([1, (2, 3)], maxlen=4), collections.deque([1, (2, 3)], maxlen=4)),
    ]


def test_flatten_opens_torch_pytree_nodes_and_rebuilds_them_whole():
    """deque was a leaf (torch opens it); each node's leaves come in torch's order and
    the rebuild keeps its type and context (a defaultdict's factory, a deque's maxlen)."""
    for tree, torch_tree in _trees():
        leaves, treedef = pytree.flatten(tree)
        assert leaves == torch_pytree.tree_flatten(torch_tree)[0]
        rebuilt = pytree.unflatten(treedef, leaves)
        assert type(rebuilt) is type(tree) and rebuilt == tree
        if isinstance(tree, collections.defaultdict):
            assert rebuilt.default_factory is list
        if isinstance(tree, collections.deque):
            assert rebuilt.maxlen == 4


def test_flatten_keeps_torch_pytree_leaves_whole():
    """A dict or list subclass, a struct sequence and a tuple subclass with attributes of
    its own are leaves, as in torch's pytree."""

    class Mapping(dict):
        pass

    for leaf in (Mapping(a=1), os.stat("."), Tagged((1, 2), "t")):
        assert torch_pytree.tree_is_leaf(leaf)
        assert pytree.flatten(leaf) == ([leaf], pytree.LEAF)
        assert not pytree.is_container(leaf)


def test_tuple_subclass_whose_new_takes_the_items_is_rebuilt_without_calling_it():
    """unflatten rebuilt a tuple subclass with kind(values): a __new__(cls, a, b) raised a
    builtin TypeError. kael opens such a subclass (a documented deviation: torch keeps it
    whole) so that compile sees its tensors."""
    leaves, treedef = pytree.flatten([Pair(1, Pair(2, 3))])
    assert leaves == [1, 2, 3]
    rebuilt = pytree.unflatten(treedef, [4, 5, 6])
    assert rebuilt == [(4, (5, 6))] and type(rebuilt[0]) is Pair and type(rebuilt[0][1]) is Pair


def test_compile_takes_and_returns_a_tuple_subclass_whose_new_takes_the_items(like_torch):
    """The review's repro: compile(lambda p: p[0] + p[1])(Pair(...)) raised a builtin
    TypeError. Replays on new data take the new tensors and return a fresh Pair."""
    add = kael.compile(lambda p: p[0] + p[1])
    split = kael.compile(lambda x: Pair(x + 1, x * 2))
    for a, b in ((1.0, 2.0), (3.0, -4.0), (0.5, 0.25)):
        k = Pair(kael.full((2,), a), kael.full((2,), b))
        t = Pair(torch.full((2,), a), torch.full((2,), b))
        like_torch(add(k), t[0] + t[1])
        got, want = split(k[0]), Pair(t[0] + 1, t[0] * 2)
        assert type(got) is Pair
        for g, w in zip(got, want, strict=True):
            like_torch(g, w)


def test_compile_passes_namedtuple_size_tuple_and_deque_through(like_torch):
    """Each node kind as an argument and as a result, replayed on new data: the tensors
    inside are the plan's inputs and outputs, the node rebuilt with its own type."""

    def step(point, shape, plain, queue):
        out = point.x.reshape(shape) * plain[0] + queue[0]
        return Point(out, point.y), out.shape, (out.sum(), plain[1]), collections.deque([out], 2)

    run = kael.compile(step)
    for v in (1.0, 2.0, -3.0):
        args = [
            Point(kael.full((6,), v), kael.ones(1)),
            kael.Size([2, 3]),
            (kael.full((1,), v + 1), 7),
            collections.deque([kael.full((2, 3), -v)], maxlen=3),
        ]
        torch_args = [
            Point(torch.full((6,), v), torch.ones(1)),
            torch.Size([2, 3]),
            (torch.full((1,), v + 1), 7),
            collections.deque([torch.full((2, 3), -v)], maxlen=3),
        ]
        got, want = run(*args), step(*torch_args)
        got_leaves, got_def = pytree.flatten(got)
        assert (
            type(got[0]) is Point
            and type(got[1]) is kael.Size
            and type(got[3]) is collections.deque
        )
        assert got[3].maxlen == 2 and got_def == pytree.flatten(step(*args))[1]
        want_leaves = torch_pytree.tree_flatten(want)[0]
        assert len(got_leaves) == len(want_leaves)
        for g, w in zip(got_leaves, want_leaves, strict=True):
            if isinstance(w, torch.Tensor):
                like_torch(g, w)
            else:
                assert g == w
