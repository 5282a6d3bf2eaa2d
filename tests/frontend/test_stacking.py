"""hstack, vstack, row_stack, column_stack, dstack, fliplr, flipud, rot90 and diff
(frontend/stacking.py) against PyTorch: values, dtype and shape over contiguous,
transposed, sliced, expanded, 0-d and empty inputs and each dtype, and the typed errors for
what PyTorch refuses."""

import pytest
import torch
from parity_helpers import LAYOUTS, close_to_torch
from parity_helpers import layout_pair as make

import kael

DTYPES = [kael.float32, kael.float64, kael.int64, kael.bool, kael.float16, kael.bfloat16]


def check(k, t):
    close_to_torch(k, t, 0, equal_nan=True)


# ---- the stacks ------------------------------------------------------------------------------

STACKS = ["hstack", "vstack", "row_stack", "column_stack", "dstack"]
# shapes each stack joins (torch accepts every list here)
STACK_CASES = {
    "hstack": [[(3,), (2,)], [(2, 3), (2, 1)], [(), ()], [(), (3,)], [(2, 2, 3), (2, 1, 3)]],
    "vstack": [[(3,), (3,)], [(2, 3), (3,)], [(), ()], [(1, 2, 3), (2, 2, 3)]],
    "column_stack": [[(3,), (3,)], [(2, 3), (2,)], [(), ()], [(3, 1), (3,), (3, 2)]],
    "dstack": [[(3,), (3,)], [(2, 3), (2, 3)], [(), ()], [(2, 3, 1), (2, 3), (2, 3, 2)]],
}
STACK_CASES["row_stack"] = STACK_CASES["vstack"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", STACKS)
def test_stacks_match_torch_across_layouts_and_dtypes(name, dtype, layout):
    for shapes in STACK_CASES[name]:
        k, t = zip(*(make(s, dtype, layout, low=0) for s in shapes))
        check(getattr(kael, name)(list(k)), getattr(torch, name)(list(t)))
        check(getattr(kael, name)(tuple(k)), getattr(torch, name)(tuple(t)))


@pytest.mark.parametrize("name", STACKS)
def test_stacks_promote_mixed_dtypes_and_keep_empty_tensors(name):
    (ka, ta), (kb, tb) = make((2, 0), kael.int64), make((2, 0), kael.float16)
    check(getattr(kael, name)([ka, kb]), getattr(torch, name)([ta, tb]))
    (ka, ta), (kb, tb) = make((2,), kael.bool, low=0, high=2), make((2,), kael.int32)
    check(getattr(kael, name)([ka, kb]), getattr(torch, name)([ta, tb]))


@pytest.mark.parametrize("name", STACKS)
def test_stacks_write_out(name):
    (ka, ta), (kb, tb) = make((2, 3)), make((2, 3))
    want = getattr(torch, name)([ta, tb])
    out = kael.empty(*want.shape)
    assert getattr(kael, name)([ka, kb], out=out) is out
    check(out, want)


@pytest.mark.parametrize("name", STACKS)
def test_stacks_refuse_empty_lists_non_tensors_and_mismatched_shapes(name):
    with pytest.raises(kael.ValueError, match=rf"{name}\(\): expected a non-empty list"):
        getattr(kael, name)([])
    with pytest.raises(
        kael.TypeError, match=rf"{name}\(\): expected a list or tuple of Tensors, got Tensor"
    ):
        getattr(kael, name)(kael.ones(2, 2))
    with pytest.raises(
        kael.TypeError, match=rf"{name}\(\): expected a Tensor as element 1, got int"
    ):
        getattr(kael, name)([kael.ones(2), 3])
    with pytest.raises(kael.Error):
        getattr(kael, name)([kael.ones(2, 3), kael.ones(4, 5)])


def test_hstack_refuses_mixed_ranks_as_cat_does():
    with pytest.raises(kael.ValueError, match="same number of dimensions|dims"):
        kael.hstack([kael.ones(3), kael.ones(2, 3)])


def test_stacks_are_not_tensor_methods():
    for name in STACKS:
        assert not hasattr(kael.Tensor, name)


# ---- fliplr, flipud --------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_fliplr_and_flipud_match_torch(dtype, layout):
    for shape in [(3, 4), (2, 3, 2), (0, 3), (3, 0)]:
        k, t = make(shape, dtype, layout, low=0)
        for name in ("fliplr", "flipud"):
            check(getattr(kael, name)(k), getattr(torch, name)(t))
            check(getattr(k, name)(), getattr(t, name)())
    k, t = make((5,), dtype, layout, low=0)
    check(kael.flipud(k), torch.flipud(t))


def test_fliplr_and_flipud_refuse_too_few_dims():
    with pytest.raises(
        kael.ValueError, match=r"fliplr\(\): input must be >= 2-d, got a 1-d tensor of shape \[3\]"
    ):
        kael.fliplr(kael.ones(3))
    with pytest.raises(kael.ValueError, match=r"flipud\(\): input must be >= 1-d, got a 0-d"):
        kael.flipud(kael.tensor(1.0))
    with pytest.raises(kael.TypeError, match=r"flipud\(\): input must be a Tensor, got str"):
        kael.flipud("s")


# ---- rot90 -----------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rot90_matches_torch_for_every_k_and_dims(dtype, layout):
    k, t = make((2, 3, 4), dtype, layout, low=0)
    for turns in range(-5, 6):
        for dims in [(0, 1), (1, 0), (0, 2), (2, -2), (-1, 0)]:
            check(kael.rot90(k, turns, dims), torch.rot90(t, turns, dims))
    check(k.rot90(), t.rot90())
    check(k.rot90(k=3, dims=[2, 1]), t.rot90(k=3, dims=[2, 1]))


def test_rot90_of_empty_matrices_matches_torch():
    for shape in [(0, 3), (2, 0)]:
        k, t = make(shape)
        for turns in range(4):
            check(kael.rot90(k, turns), torch.rot90(t, turns))


def test_rot90_refuses_bad_dims_and_k():
    x = kael.ones(2, 3)
    with pytest.raises(
        kael.ValueError, match=r"expected total rotation dims == 2, but got dims = 1"
    ):
        kael.rot90(x, 1, [0])
    with pytest.raises(
        kael.ValueError,
        match=r"expected rotation dims to be different, but got dim0 = 0 and dim1 = -2",
    ):
        kael.rot90(x, 1, [0, -2])
    with pytest.raises(
        kael.IndexError,
        match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)",
    ):
        kael.rot90(x, 1, [0, 2])
    with pytest.raises(
        kael.ValueError, match=r"rot90\(\): expected total dims >= 2, but got total dims = 1"
    ):
        kael.rot90(kael.ones(3))
    with pytest.raises(kael.TypeError, match=r"rot90\(\): argument 'k' must be int, not float"):
        kael.rot90(x, 1.5)
    with pytest.raises(
        kael.TypeError, match=r"rot90\(\): dims must be a list or tuple of two ints"
    ):
        kael.rot90(x, 1, 0)


# ---- diff ------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_diff_matches_torch_for_each_order_and_dim(dtype, layout):
    k, t = make((3, 5), dtype, layout, low=0, high=9)
    for n in range(0, 7):
        for dim in (0, 1, -1, -2):
            check(kael.diff(k, n, dim), torch.diff(t, n, dim))
    check(k.diff(n=2), t.diff(n=2))
    k1, t1 = make((6,), dtype, layout, low=0, high=9)
    check(kael.diff(k1, 3), torch.diff(t1, 3))


def test_diff_joins_prepend_and_append_with_promotion():
    k, t = make((2, 3), kael.int32)
    (kp, tp), (ka, ta) = make((2, 1), kael.int64), make((2, 2), kael.float32)
    check(kael.diff(k, prepend=kp), torch.diff(t, prepend=tp))
    check(kael.diff(k, n=2, append=ka), torch.diff(t, n=2, append=ta))
    check(kael.diff(k, dim=0, prepend=k, append=k), torch.diff(t, dim=0, prepend=t, append=t))
    kb, tb = make((1, 3), kael.bool, low=0, high=2)
    check(kael.diff(kb, dim=0, prepend=kb), torch.diff(tb, dim=0, prepend=tb))


def test_diff_of_order_zero_is_a_copy():
    k, t = make((2, 3))
    got = kael.diff(k, 0)
    check(got, torch.diff(t, 0))
    got[0, 0] = 100.0
    assert k[0, 0].item() != 100.0


def test_diff_of_empty_inputs_matches_torch():
    for shape, dim in [((0,), 0), ((2, 0), 1), ((0, 3), 1), ((1, 4), 0)]:
        k, t = make(shape)
        check(kael.diff(k, dim=dim), torch.diff(t, dim=dim))


def test_diff_refuses_bad_inputs():
    x = kael.ones(2, 3)
    with pytest.raises(kael.ValueError, match=r"diff\(\): order must be non-negative but got -1"):
        kael.diff(x, n=-1)
    with pytest.raises(kael.TypeError, match=r"diff\(\): argument 'n' must be int, not float"):
        kael.diff(x, n=1.5)
    with pytest.raises(kael.IndexError, match=r"Dimension out of range .* but got 2\)"):
        kael.diff(x, dim=2)
    with pytest.raises(
        kael.ValueError, match=r"diff\(\): expects input to be at least one-dimensional"
    ):
        kael.diff(kael.tensor(1.0))
    with pytest.raises(
        kael.ValueError,
        match=r"expects prepend to have the same number of dims as input \(2\), got 1",
    ):
        kael.diff(x, prepend=kael.ones(3))
    with pytest.raises(kael.ValueError, match=r"input.size\(0\) = 2, but got append.size\(0\) = 3"):
        kael.diff(x, append=kael.ones(3, 1))
    with pytest.raises(kael.TypeError, match=r"diff\(\): prepend must be a Tensor, got float"):
        kael.diff(x, prepend=1.0)


# ---- compile ---------------------------------------------------------------------------------


def test_the_family_runs_inside_compile_with_eagers_values():
    def f(x):
        y = kael.vstack([x, kael.fliplr(x)])
        return kael.diff(kael.rot90(y, 1), n=2) + kael.hstack([x, x]).sum()

    k, _ = make((3, 4))
    eager = f(k)
    compiled = kael.compile(f)
    for _ in range(2):
        check(compiled(k), torch.from_dlpack(eager.contiguous()))
