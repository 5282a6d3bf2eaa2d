"""kael.func.vmap against torch.func.vmap on the same inputs: values, dtype and shape over
ops, in_dims and out_dims trees, chunks, nesting and kael.compile; the randomness modes;
and every refused input with torch's own message."""

import collections
import functools
import re

import numpy as np
import pytest
import torch
from parity_helpers import same, same_tree

import kael
from kael.func import vmap

Pair = collections.namedtuple("Pair", "a b")


def _both(*shapes, seed=0):
    """(kael tensors, torch tensors) over the same float32 values, one per shape."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return [kael.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]


def _convert(tree, to):
    """`tree` with each numpy array made a tensor by `to` (lists, tuples, dicts kept)."""
    if isinstance(tree, np.ndarray):
        return to(tree)
    if isinstance(tree, dict):
        return {k: _convert(v, to) for k, v in tree.items()}
    if isinstance(tree, tuple | list):
        values = [_convert(v, to) for v in tree]
        return type(tree)(*values) if hasattr(type(tree), "_fields") else type(tree)(values)
    return tree


def _matches_torch(func, args, kwargs=None, **options):
    """vmap(func, **options) over `args` (numpy arrays in a tree) agrees with torch's."""
    arrays = _convert(args, lambda a: a)
    ours = vmap(func, **options)(*_convert(arrays, kael.tensor), **(kwargs or {}))
    theirs = torch.func.vmap(func, **options)(*_convert(arrays, torch.tensor), **(kwargs or {}))
    same_tree(ours, theirs)
    return ours


def _arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


OPS = {
    "unary": (lambda a: a.exp().sin(), (4, 3)),
    "binary_broadcast": (lambda a, b: a * b - a / (b.abs() + 1), (4, 3), (4, 1)),
    "matmul": (lambda a, b: a @ b, (4, 2, 3), (4, 3, 5)),
    "matvec": (lambda a, b: a @ b, (4, 2, 3), (4, 3)),
    "sum_dim": (lambda a: a.sum(dim=1), (4, 2, 3)),
    "amax_negative_dim": (lambda a: a.amax(dim=-1, keepdim=True), (4, 2, 3)),
    "mean_all": (lambda a: a.mean(), (5, 2, 3)),
    "integer": (lambda a: (a > 0).long().cumsum(0), (4, 6)),
}


@pytest.mark.parametrize("name", OPS)
def test_ops_map_over_the_first_dim_as_torch(name):
    func, *shapes = OPS[name]
    _matches_torch(func, _arrays(*shapes))


@pytest.mark.parametrize(
    "in_dims, shapes",
    [
        ((1, None), [(2, 4, 3), (3,)]),
        ((-1, 0), [(3, 4), (4, 3)]),
        (-2, [(2, 4, 3), (4, 3)]),
        ((None, 2), [(3, 3), (3, 3, 4)]),
    ],
)
def test_in_dims_ints_none_and_negative_as_torch(in_dims, shapes):
    _matches_torch(lambda a, b: a * b.sum(), _arrays(*shapes), in_dims=in_dims)


def test_in_dims_nested_tree_over_dicts_lists_and_named_tuples_as_torch():
    w, b, x, y = _arrays((3, 2), (3,), (4, 2), (2, 4))

    def f(params, pair, scale):
        return params["w"] @ pair[0].a + params["b"] * pair[0].b.sum() * pair[1].sum() * scale

    in_dims = ({"w": None, "b": None}, [Pair(0, 1), -2], None)
    _matches_torch(f, ({"w": w, "b": b}, [Pair(x, y), x], 2.0), in_dims=in_dims)


def test_a_dict_in_in_dims_is_matched_by_key_not_order():
    x, y = _arrays((2, 5), (7, 2))
    args = ({"a": kael.tensor(x), "b": kael.tensor(y)},)
    got = vmap(lambda d: d["a"].sum() + d["b"].sum(), in_dims=({"b": 1, "a": 0},))(*args)
    want = torch.tensor(x).sum(1) + torch.tensor(y).sum(0)
    same(got, want)


@pytest.mark.parametrize("out_dims", [1, -1, (0, 1), (2, -2), (-3, 0), (1,)])
def test_out_dims_int_tuple_and_negative_as_torch(out_dims):
    (a,) = _arrays((4, 3, 2))
    func = (lambda x: x * 2) if out_dims == (1,) else (lambda x: (x * 2, x.sum(0)))
    _matches_torch(func, [a], out_dims=out_dims)


def test_an_unmapped_output_with_out_dim_zero_is_repeated_as_torch():
    a, c = _arrays((4, 3), (5,))
    _matches_torch(lambda x, k: (x, k + 1), [a, c], in_dims=(0, None))


def test_out_dims_over_a_list_and_dict_output_as_torch():
    (a,) = _arrays((4, 3))
    _matches_torch(lambda x: [x, {"k": x.sum()}], [a], out_dims=[1, {"k": 0}])


def test_a_python_value_with_out_dim_none_comes_back_as_torch():
    (a,) = _arrays((4, 3))
    _matches_torch(lambda x: (x, 3), [a], out_dims=(0, None))


def test_keyword_arguments_are_never_mapped():
    (a,), (t,) = _both((4, 3))
    scale_k, scale_t = kael.arange(3.0), torch.arange(3.0)
    same(
        vmap(lambda x, *, s: x * s)(a, s=scale_k),
        torch.func.vmap(lambda x, *, s: x * s)(t, s=scale_t),
    )


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 10])
def test_chunk_size_changes_nothing_but_the_stacking(chunk_size):
    a, b = _arrays((5, 3), (3, 5))
    _matches_torch(
        lambda x, y: (x.exp(), y.sum()), [a, b], in_dims=(0, 1), out_dims=(1, 0),
        chunk_size=chunk_size,
    )  # fmt: skip


def test_nested_vmap_as_torch():
    a, b = _arrays((3, 4, 2), (3, 2))
    theirs = torch.func.vmap(torch.func.vmap(lambda x, y: x @ y), in_dims=(1, None))
    ours = vmap(vmap(lambda x, y: x @ y), in_dims=(1, None))
    same(ours(kael.tensor(a), kael.tensor(b)), theirs(torch.tensor(a), torch.tensor(b)))


def test_compiled_vmap_traces_the_loop_into_a_plan():
    compiled = kael.compile(vmap(lambda x, y: (x * y).sum(-1).relu(), in_dims=(0, None)))
    want = torch.func.vmap(lambda x, y: (x * y).sum(-1).relu(), in_dims=(0, None))
    for seed in (0, 1):  # the second call replays the plan on new values
        (a, b), (ta, tb) = _both((4, 2, 3), (3,), seed=seed)
        same(compiled(a, b), want(ta, tb))
    info = compiled.cache_info()
    assert (info.traces, info.hits) == (1, 1)


def test_a_batch_of_size_zero_gives_empty_outputs_as_torch():
    (a,) = _arrays((0, 3))
    _matches_torch(lambda x: (x.sum(0), {"k": x * 2}), [a])


# Functions that refuse an all-zero slice: (kael's, torch's, the batch's shape and dtype).
_REFUSING_ZEROS = {
    "inv": (kael.linalg.inv, torch.linalg.inv, (0, 3, 3), "float32"),
    "cholesky": (kael.linalg.cholesky, torch.linalg.cholesky, (0, 2, 2), "float64"),
    "multinomial": (
        lambda p: kael.multinomial(p, 1),
        lambda p: torch.multinomial(p, 1),
        (0, 3),
        "float32",
    ),
    "integer_divisor": (lambda x: 10 // x, lambda x: 10 // x, (0, 2, 2), "int64"),
}


@pytest.mark.parametrize("name", _REFUSING_ZEROS)
def test_a_batch_of_size_zero_returns_empty_for_functions_refusing_zeros(name):
    ours, theirs, shape, dtype = _REFUSING_ZEROS[name]
    got = vmap(ours, randomness="different")(kael.zeros(shape, dtype=getattr(kael, dtype)))
    want = torch.func.vmap(theirs, randomness="different")(
        torch.zeros(shape, dtype=getattr(torch, dtype))
    )
    same(got, want)


def test_a_batch_of_size_zero_raises_the_shape_error_of_every_slice():
    with pytest.raises(kael.ValueError, match=r"shapes \[3\] and \[4\] cannot be multiplied"):
        vmap(lambda x: x @ kael.ones(4))(kael.zeros(0, 3))


def test_a_batch_of_size_zero_draws_nothing_with_randomness_different():
    kael.manual_seed(5)
    got = vmap(_draw, randomness="different")(kael.zeros(0, 3))
    after = kael.rand(2)
    kael.manual_seed(5)
    assert got.shape == (0, 3)
    assert kael.equal(after, kael.rand(2))  # torch's empty batch draws nothing either


@pytest.mark.parametrize("chunk_size", [None, 1])
def test_an_output_with_out_dim_none_equal_in_every_slice_comes_back_once(chunk_size):
    (a,), (t,) = _both((4, 3))
    y_k, y_t = kael.ones(2), torch.ones(2)
    mapped = vmap(lambda x, y: (x, y * 2), (0, None), (0, None), chunk_size=chunk_size)
    got = mapped(a, y_k)
    want = torch.func.vmap(lambda x, y: (x, y * 2), in_dims=(0, None), out_dims=(0, None))(t, y_t)
    same_tree(got, want)


# ---- randomness -----------------------------------------------------------------------------


_OWN = kael.Generator()  # a generator of its own, shared by a test's slices


def _draw(x):
    return x * 0 + kael.rand(3)


def test_randomness_same_gives_every_slice_the_draws_of_one_call():
    kael.manual_seed(5)
    got = vmap(_draw, randomness="same")(kael.zeros(4, 3))
    after = kael.rand(2)
    kael.manual_seed(5)
    one, next_draw = kael.rand(3), kael.rand(2)
    for row in range(4):
        assert kael.equal(got[row], one)
    assert kael.equal(after, next_draw)  # the stream moved by one slice's draws


def test_randomness_different_draws_anew_per_slice():
    kael.manual_seed(5)
    got = vmap(_draw, randomness="different")(kael.zeros(4, 3))
    kael.manual_seed(5)
    assert kael.equal(got, kael.rand(4, 3))  # the loop's draws, in slice order


def test_randomness_same_holds_under_compile_at_every_call():
    compiled = kael.compile(
        vmap(lambda x: x + kael.nn.functional.dropout(kael.ones(6), 0.5), randomness="same")
    )
    first, second = compiled(kael.zeros(4, 6)), compiled(kael.zeros(4, 6))
    for got in (first, second):
        assert all(kael.equal(got[i], got[0]) for i in range(4))
    assert not kael.equal(first[0], second[0])  # each call draws anew


@pytest.mark.parametrize("draw", [lambda: kael.randperm(5), lambda: kael.rand(5, generator=_OWN)])
def test_randomness_same_under_compile_refuses_an_op_drawn_outside_the_plan(draw):
    compiled = kael.compile(vmap(lambda x: x + draw(), randomness="same"))
    with pytest.raises(kael.Error, match=r"randomness='same'\) under kael.compile"):
        compiled(kael.zeros(3, 5))
    eager = vmap(lambda x: x + draw(), randomness="same")(kael.zeros(3, 5))
    assert kael.equal(eager[1], eager[0]) and kael.equal(eager[2], eager[0])


@pytest.mark.parametrize(
    "outer, inner, pattern",
    [("different", "same", "rows"), ("same", "different", "columns"), ("same", "same", "all")],
)
def test_nested_randomness_modes_as_torch(outer, inner, pattern):
    got = vmap(vmap(lambda x: x + kael.rand(()), randomness=inner), randomness=outer)(
        kael.zeros(3, 4)
    )
    rows_equal = all(kael.equal(got[:, j], got[:, 0]) for j in range(4))
    cols_equal = all(kael.equal(got[i], got[0]) for i in range(3))
    assert (rows_equal, cols_equal) == {
        "rows": (True, False), "columns": (False, True), "all": (True, True)
    }[pattern]  # fmt: skip


ERROR_MODE = re.escape(
    "vmap: called random operation while in randomness error mode. Please either use the "
    "'same' or 'different' randomness flags on vmap or perform the randomness operation out "
    "of vmap"
)


@pytest.mark.parametrize(
    "make",
    [
        lambda: vmap(_draw),
        lambda: vmap(vmap(_draw, randomness="different")),
        lambda: vmap(vmap(_draw), randomness="different"),
        lambda: kael.compile(vmap(_draw)),
    ],
)
def test_randomness_error_refuses_a_draw_with_torchs_message(make):
    with pytest.raises(kael.Error, match=ERROR_MODE):
        make()(kael.zeros(2, 3, 3))


def test_torch_refuses_a_draw_in_error_mode_with_that_message():
    with pytest.raises(RuntimeError, match=ERROR_MODE):
        torch.func.vmap(lambda x: x * 0 + torch.rand(3))(torch.zeros(2, 3))


def test_outputs_of_different_trees_across_slices_are_refused():
    def branchy(x):
        return (x,) if bool(x.sum() > 0) else [x]

    with pytest.raises(kael.ValueError, match=r"`branchy` returned outputs of structure"):
        vmap(branchy)(kael.tensor([[1.0], [-1.0]]))
    assert vmap(branchy)(kael.tensor([[1.0], [2.0]]))[0].shape == (2, 1)


# ---- refusals, each with torch's message ----------------------------------------------------


def f(a, b):
    return a + b


def identity(a):
    return a


def _refusal(call, torch_args, kael_args):
    """torch's error for call(torch.func.vmap, *torch_args), which kael's must repeat."""
    with pytest.raises(Exception) as theirs:
        call(torch.func.vmap, *torch_args)
    with pytest.raises(type(theirs.value), match=re.escape(str(theirs.value)) + "$") as ours:
        call(vmap, *kael_args)
    assert isinstance(ours.value, kael.Error)


BAD = {
    "in_dims_list_at_top": lambda v, x, y: v(f, in_dims=[0, 0])(x, x),
    "in_dims_none_at_top": lambda v, x, y: v(f, in_dims=None)(x, x),
    "in_dims_too_short": lambda v, x, y: v(f, in_dims=(0,))(x, x),
    "in_dims_too_long": lambda v, x, y: v(f, in_dims=(0, None, 0))(x, x),
    "in_dims_list_for_tuple": lambda v, x, y: v(identity, in_dims=([0, 1],))((x, x)),
    "in_dims_tuple_for_named": lambda v, x, y: v(identity, in_dims=((0, 1),))(Pair(x, x)),
    "in_dims_dict_keys": lambda v, x, y: v(identity, in_dims=({"a": 0, "b": 1},))({"a": x}),
    "in_dim_not_int": lambda v, x, y: v(f, in_dims=("a", 0))(x, x),
    "in_dim_float": lambda v, x, y: v(identity, in_dims=(1.5,))(x),
    "in_dim_too_big": lambda v, x, y: v(f, in_dims=(3, 0))(x, x),
    "in_dim_too_negative": lambda v, x, y: v(identity, in_dims=-3)(x),
    "mapped_non_tensor": lambda v, x, y: v(f)(x, 2.0),
    "no_mapped_input": lambda v, x, y: v(f, in_dims=(None, None))(x, x),
    "none_over_a_tuple": lambda v, x, y: v(identity, in_dims=(None,))((x, x)),
    "sizes_differ": lambda v, x, y: v(f)(x, y),
    "no_inputs": lambda v, x, y: v(f)(),
    "only_keywords": lambda v, x, y: v(identity)(a=x),
    "returns_int": lambda v, x, y: v(lambda a: (a, 3))(x),
    "returns_float": lambda v, x, y: v(lambda a: 3.0)(x),
    "returns_none": lambda v, x, y: v(lambda a: None)(x),
    "partial_name": lambda v, x, y: v(functools.partial(lambda a, b: 3, b=1))(x),
    "out_dims_tuple_for_tensor": lambda v, x, y: v(identity, out_dims=(0, 1))(x),
    "out_dims_list_for_tensor": lambda v, x, y: v(identity, out_dims=[1])(x),
    "out_dims_short": lambda v, x, y: v(lambda a: (a, a), out_dims=(0,))(x),
    "out_dims_tuple_for_list": lambda v, x, y: v(lambda a: [a, a], out_dims=(0, 1))(x),
    "out_dims_dict_keys": lambda v, x, y: v(lambda a: {"b": a, "a": a}, out_dims={"a": 1})(x),
    "out_dims_tuple_for_named": lambda v, x, y: v(lambda a: Pair(a, a), out_dims=(0, 1))(x),
    "out_dims_string": lambda v, x, y: v(identity, out_dims="x")(x),
    "out_dims_string_leaf": lambda v, x, y: v(lambda a: (a, a), out_dims=(0, "x"))(x),
    "out_dim_too_big": lambda v, x, y: v(identity, out_dims=3)(x),
    "out_dim_too_negative": lambda v, x, y: v(identity, out_dims=-3)(x),
    "out_dim_none_for_mapped": lambda v, x, y: v(identity, out_dims=None)(x),
    "randomness_unknown": lambda v, x, y: v(f, randomness="foo"),
    "chunk_size_zero": lambda v, x, y: v(f, chunk_size=0),
    "chunk_size_negative": lambda v, x, y: v(f, chunk_size=-2),
}


@pytest.mark.parametrize("name", BAD)
def test_refusals_repeat_torchs_class_and_message(name):
    (x, y), (tx, ty) = _both((2, 3), (3, 3))
    _refusal(BAD[name], (tx, ty), (x, y))


def test_an_output_that_varies_with_out_dim_none_is_refused_and_the_same_one_is_not():
    (a,) = _both((4, 3))[0]
    with pytest.raises(kael.ValueError, match="can not return a BatchedTensor when out_dim"):
        vmap(lambda x: x * 2, out_dims=None)(a)
    assert vmap(lambda x: a, out_dims=None)(a) is a


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_constant_output_holding_nan_with_out_dim_none_comes_back_as_torch(dtype):
    (a,), (t,) = _both((4, 3))

    def func(lib):
        nan = lib.tensor([float("nan"), 1.0], dtype=getattr(lib, dtype))
        return lambda x: (x, nan.clone())  # a new, equal tensor in every slice

    want = torch.func.vmap(func(torch), out_dims=(0, None))(t)
    got = vmap(func(kael), out_dims=(0, None))(a)
    same(got, want)


@pytest.mark.parametrize(
    "values",
    [[[-1.0], [4.0]], [[float("nan"), 1.0], [float("nan"), 2.0]]],
    ids=["nan_in_one", "nan_in_both"],
)
def test_an_output_that_differs_beside_its_nans_with_out_dim_none_is_refused(values):
    x = kael.tensor(values)
    with pytest.raises(kael.ValueError, match="can not return a BatchedTensor when out_dim"):
        vmap(lambda row: row.sqrt(), out_dims=None)(x)


def test_a_non_int_chunk_size_is_a_type_error():
    with pytest.raises(kael.TypeError, match="chunk_size should be None or an int"):
        vmap(f, chunk_size=1.5)
    assert vmap(identity, chunk_size=True)(kael.ones(2)).shape == (2,)
