"""hstack, vstack, row_stack, column_stack, dstack, fliplr, flipud, rot90 and diff
(frontend/stacking.py) against PyTorch: values, dtype and shape over contiguous,
transposed, sliced, expanded, 0-d and empty inputs and each dtype, and the typed errors for
what PyTorch refuses."""

import pytest
import torch
from kernel_helpers import TORCH_DTYPES
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


# ---- block_diag ------------------------------------------------------------------------------

BLOCK_CASES = [[(2, 3), (1, 2)], [(3,), (2, 2)], [(), (2,), ()], [(0, 2), (2, 0), (0,)], [(1, 1)]]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_block_diag_matches_torch_for_0d_1d_and_2d_blocks(dtype, layout):
    for shapes in BLOCK_CASES:
        k, t = zip(*(make(s, dtype, layout, low=1) for s in shapes))
        check(kael.block_diag(*k), torch.block_diag(*t))


MIXED_BLOCKS = [
    [kael.int64, kael.float16],
    [kael.bool, kael.int32],
    [kael.float16, kael.bfloat16],
    [kael.float32, kael.float64],
]


@pytest.mark.parametrize("dtypes", MIXED_BLOCKS, ids=str)
@pytest.mark.parametrize("shapes", [[(2,), (2, 2)], [(2,), ()], [(), ()]], ids=str)
def test_block_diag_promotes_as_torchs_result_type_with_0d_counting_less(dtypes, shapes):
    k, t = zip(*(make(s, d, low=1, high=3) for s, d in zip(shapes, dtypes)))
    check(kael.block_diag(*k), torch.block_diag(*t))


def test_block_diag_of_nothing_is_an_empty_row():
    check(kael.block_diag(), torch.block_diag())


def test_block_diag_refuses_non_tensors_and_3d_blocks():
    with pytest.raises(
        kael.ValueError,
        match=r"block_diag\(\): Input tensors must have 2 or fewer dimensions. Input 1 has 3 "
        r"dimensions \(shape \[1, 1, 1\]\)",
    ):
        kael.block_diag(kael.ones(2), kael.ones(1, 1, 1))
    with pytest.raises(
        kael.TypeError, match=r"block_diag\(\): expected a Tensor as element 1, got int"
    ):
        kael.block_diag(kael.ones(2), 3)
    with pytest.raises(
        kael.TypeError, match=r"block_diag\(\): expected a Tensor as element 0, got list"
    ):
        kael.block_diag([kael.ones(2)])


# ---- cartesian_prod, combinations ------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cartesian_prod_matches_torch(dtype, layout):
    for sizes in [(3, 2), (2, 3, 4), (4, 0), (0, 2, 3), (5,)]:
        k, t = zip(*(make((n,), dtype, layout, low=0) for n in sizes))
        check(kael.cartesian_prod(*k), torch.cartesian_prod(*t))


def test_cartesian_prod_of_one_tensor_is_that_tensor():
    k = kael.ones(3)
    assert kael.cartesian_prod(k) is k


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("with_replacement", [False, True])
def test_combinations_match_torch_for_each_r(with_replacement, dtype, layout):
    for n in (0, 1, 4, 5):
        k, t = make((n,), dtype, layout, low=0)
        for r in range(0, 5):
            check(
                kael.combinations(k, r, with_replacement),
                torch.combinations(t, r, with_replacement),
            )
    k, t = make((4,), dtype, layout, low=0)
    check(kael.combinations(k), torch.combinations(t))
    check(
        kael.combinations(k, r=3, with_replacement=with_replacement),
        torch.combinations(t, r=3, with_replacement=with_replacement),
    )


def test_cartesian_prod_and_combinations_are_not_tensor_methods():
    for name in ("block_diag", "cartesian_prod", "combinations", "vander"):
        assert not hasattr(kael.Tensor, name)


VECTOR_ERRORS = [
    (lambda: kael.cartesian_prod(), kael.ValueError, r"meshgrid expects a non-empty TensorList, got no tensors"),
    (lambda: kael.cartesian_prod(kael.tensor(1.0), kael.ones(2)), kael.ValueError, r"cartesian_prod\(\): Expect a 1D vector, but got shape \[\]"),
    (lambda: kael.cartesian_prod(kael.ones(2, 2)), kael.ValueError, r"Expect a 1D vector, but got shape \[2, 2\]"),
    (lambda: kael.cartesian_prod(kael.ones(2), kael.ones(2).long()), kael.TypeError, r"same dtype, got float32, int64"),
    (lambda: kael.cartesian_prod([kael.ones(2)]), kael.TypeError, r"cartesian_prod\(\): input must be a Tensor, got list"),
    (lambda: kael.combinations(kael.ones(3, 3)), kael.ValueError, r"combinations\(\): Expect a 1D vector, but got shape \[3, 3\]"),
    (lambda: kael.combinations(kael.tensor(3.0)), kael.ValueError, r"Expect a 1D vector, but got shape \[\]"),
    (lambda: kael.combinations(kael.ones(3), -1), kael.ValueError, r"Expect a non-negative number, but got -1"),
    (lambda: kael.combinations(kael.ones(3), 2.0), kael.TypeError, r"argument 'r' must be int, not float"),
    (lambda: kael.combinations(kael.ones(3), True), kael.TypeError, r"argument 'r' must be int, not bool"),
    (lambda: kael.combinations(kael.ones(3), 2, 1), kael.TypeError, r"with_replacement must be a bool, got int"),
    (lambda: kael.combinations([1, 2]), kael.TypeError, r"combinations\(\): input must be a Tensor, got list"),
    (lambda: kael.vander(kael.ones(2, 2)), kael.ValueError, r"vander\(\): x must be a one-dimensional tensor, got shape \[2, 2\]"),
    (lambda: kael.vander(kael.tensor(1.0)), kael.ValueError, r"one-dimensional tensor, got shape \[\]"),
    (lambda: kael.vander(kael.ones(3), N=-1), kael.ValueError, r"vander\(\): N must be non-negative, got N=-1"),
    (lambda: kael.vander(kael.ones(3), N=2.0), kael.TypeError, r"argument 'N' must be int, not float"),
    (lambda: kael.vander(kael.ones(3), N=True), kael.TypeError, r"argument 'N' must be int, not bool"),
    (lambda: kael.vander(kael.ones(3), 3, 1), kael.TypeError, r"increasing must be a bool, got int"),
    (lambda: kael.diagflat(kael.ones(2), 1.0), kael.TypeError, r"diagflat\(\): argument 'offset' must be int, not float"),
    (lambda: kael.diagflat(kael.ones(2), True), kael.TypeError, r"argument 'offset' must be int, not bool"),
    (lambda: kael.diagflat([1.0, 2.0]), kael.TypeError, r"diagflat\(\): input must be a Tensor, got list"),
]  # fmt: skip


@pytest.mark.parametrize("call,error,message", VECTOR_ERRORS)
def test_vector_builders_refuse_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---- vander, diagflat ------------------------------------------------------------------------

ALL_INTS = DTYPES + [kael.int32, kael.int8, kael.uint8]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_INTS, ids=str)
def test_vander_matches_torch_with_integers_and_bool_as_int64(dtype, layout):
    for n in (0, 1, 4):
        k, t = make((n,), dtype, layout, low=-2, high=3)
        for N in (None, 0, 1, 2, 5):
            for increasing in (False, True):
                check(kael.vander(k, N, increasing), torch.vander(t, N, increasing))
    k, t = make((3,), dtype, layout, low=0, high=3)
    check(kael.vander(k, N=4, increasing=True), torch.vander(t, N=4, increasing=True))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_diagflat_matches_torch_as_function_and_method(dtype, layout):
    for shape in [(3,), (2, 3), (2, 2, 2), (), (0,), (0, 3)]:
        k, t = make(shape, dtype, layout, low=1)
        for offset in (0, 1, -2, 3):
            check(kael.diagflat(k, offset), torch.diagflat(t, offset))
            check(k.diagflat(offset=offset), t.diagflat(offset=offset))
        check(k.diagflat(), t.diagflat())


def test_the_vector_builders_run_inside_compile_with_eagers_values():
    def f(x):
        return kael.vander(x, 3) @ kael.diagflat(x[:3]) + kael.block_diag(x[:2], x[2]).sum()

    k, _ = make((4,))
    eager = f(k)
    compiled = kael.compile(f)
    for _ in range(2):
        check(compiled(k), torch.from_dlpack(eager.contiguous()))


# ---- gradient --------------------------------------------------------------------------------

GRADIENT_KWARGS = [
    {},
    {"spacing": 2.0},
    {"spacing": 3},
    {"spacing": [0.5, 2.0]},
    {"dim": 1},
    {"dim": -2, "spacing": [1.5]},
    {"dim": [1, 0], "spacing": (2.0, 0.25)},
    {"dim": (0,)},
]


def _grad_check(k, t, tol):
    assert isinstance(k, tuple) and len(k) == len(t)
    close_to_torch(k, t, tol)
    for a, b in zip(k, t):
        assert a.dtype is kael.from_dlpack(b.clone()).dtype and a.shape == tuple(b.shape)


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("kwargs", GRADIENT_KWARGS, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "expanded"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64], ids=str)
def test_gradient_uniform_spacing_matches_torch(dtype, layout, kwargs, edge_order):
    k, t = make((4, 5), dtype, layout)
    tol = 1e-6 if dtype is kael.float32 else 1e-12
    _grad_check(
        kael.gradient(k, **kwargs, edge_order=edge_order),
        torch.gradient(t, **kwargs, edge_order=edge_order),
        tol,
    )


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("coords_dtype", [kael.float32, kael.float64, kael.int64], ids=str)
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64], ids=str)
def test_gradient_coordinate_spacing_matches_torch(dtype, coords_dtype, edge_order):
    k, t = make((4, 5), dtype, "transposed")
    values = ([0, 1, 3, 4], [-2, 0, 1, 5, 6])
    coords = [make_coords(v, coords_dtype) for v in values]
    kc, tc = [c[0] for c in coords], [c[1] for c in coords]
    tol = 1e-5 if kael.float32 in (dtype, coords_dtype) else 1e-12
    got = kael.gradient(k, spacing=kc, edge_order=edge_order)
    _grad_check(got, torch.gradient(t, spacing=tc, edge_order=edge_order), tol)
    got = kael.gradient(k, spacing=kc[1:], dim=1, edge_order=edge_order)
    _grad_check(got, torch.gradient(t, spacing=tc[1:], dim=1, edge_order=edge_order), tol)


def make_coords(values, dtype):
    t = torch.tensor(values).to(TORCH_DTYPES[dtype])
    return kael.from_dlpack(t.clone()), t


def test_gradient_of_3d_0d_and_empty_inputs_matches_torch():
    k, t = make((3, 4, 2), kael.float64, "sliced")
    _grad_check(kael.gradient(k), torch.gradient(t), 1e-12)
    _grad_check(kael.gradient(k, dim=[2, 0]), torch.gradient(t, dim=[2, 0]), 1e-12)
    k0, t0 = make((), kael.float32)
    assert kael.gradient(k0) == () == torch.gradient(t0)
    e, te = make((0, 3), kael.float32)
    _grad_check(kael.gradient(e, dim=1), torch.gradient(te, dim=1), 0)
    _grad_check(kael.gradient(e, dim=1, edge_order=2), torch.gradient(te, dim=1, edge_order=2), 0)


def test_gradient_is_a_function_only_as_in_torch():
    assert not hasattr(torch.Tensor, "gradient") and not hasattr(kael.Tensor, "gradient")


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.gradient(kael.ones(3, 4), spacing=[2.0]), kael.ValueError, "'self.dim\\(\\) = 2', since dim argument was not given, but got a list of length 1"),
        (lambda: kael.gradient(kael.ones(3, 4), spacing=[1.0, 2.0, 3.0]), kael.ValueError, "got a list of length 3"),
        (lambda: kael.gradient(kael.ones(3, 4), spacing=[1.0, 2.0], dim=0), kael.ValueError, "spacing argument of length 2 and a dim argument of length 1"),
        (lambda: kael.gradient(kael.ones(3, 4), dim=0, edge_order=3), kael.ValueError, "only supports edge_order=1 and edge_order=2, got edge_order=3"),
        (lambda: kael.gradient(kael.ones(3, 2), dim=1, edge_order=2), kael.ValueError, "at least edge_order\\+1 \\(edge_order = 2\\), but dim 1 has size 2"),
        (lambda: kael.gradient(kael.ones(3, 1)), kael.ValueError, "dim 1 has size 1"),
        (lambda: kael.gradient(kael.ones(0, 3)), kael.ValueError, "dim 0 has size 0"),
        (lambda: kael.gradient(kael.ones(3, 4), dim=2), kael.IndexError, "range of \\[-2, 1\\], but got 2"),
        (lambda: kael.gradient(kael.ones(3, 4), dim=(0, 0)), kael.ValueError, "dim 0 appears multiple times"),
        (lambda: kael.gradient(kael.ones(3, dtype=kael.bool)), kael.TypeError, "two bool tensors"),
        (lambda: kael.gradient(kael.ones(3, dtype=kael.uint8)), kael.TypeError, "does not support uint8"),
        (lambda: kael.gradient(kael.ones(3, 4), spacing=[kael.ones(1, 3)], dim=0), kael.ValueError, "one dimension, but got an element with 2 dimensions"),
        (lambda: kael.gradient(kael.ones(3, 4), spacing=[kael.tensor(2.0)], dim=0), kael.ValueError, "got an element with 0 dimensions"),
        (lambda: kael.gradient(kael.ones(3, 4), spacing=[kael.ones(4)], dim=0), kael.ValueError, "to have 3 entries .* got 4"),
        (lambda: kael.gradient(kael.ones(3, 4), spacing="a"), kael.TypeError, "'spacing' must be a scalar or a list, not str"),
        (lambda: kael.gradient(kael.ones(3, 4), spacing=kael.ones(3), dim=0), kael.TypeError, "not Tensor"),
        (lambda: kael.gradient(kael.ones(3, 4), dim=0.0), kael.TypeError, "'dim' must be int, not float"),
        (lambda: kael.gradient(kael.ones(3, 4), edge_order=1.0), kael.TypeError, "'edge_order' must be int, not float"),
    ],
)  # fmt: skip
def test_gradient_refuses_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize(
    "step", [(2.0, "float32"), (0.25, "float64"), (3, "int64"), (True, "bool")]
)
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64], ids=str)
def test_gradient_takes_a_0d_tensor_spacing_as_its_number(dtype, step, edge_order):
    """A 0-d tensor spacing is a scalar step, as torch's parser reads it (a bool one as 0/1)."""
    k, t = make((4, 5), dtype, "transposed")
    value, name = step
    ks = kael.tensor(value, dtype=getattr(kael, "bool" if name == "bool" else name))
    ts = torch.tensor(value, dtype=getattr(torch, name))
    tol = 1e-6 if dtype is kael.float32 else 1e-12
    for kwargs in ({}, {"dim": 1}, {"dim": [1, 0]}):
        _grad_check(
            kael.gradient(k, spacing=ks, edge_order=edge_order, **kwargs),
            torch.gradient(t, spacing=ts, edge_order=edge_order, **kwargs),
            tol,
        )


def test_gradient_0d_tensor_spacing_of_zero_empty_and_0d_inputs_matches_torch():
    k, t = make((3, 4), kael.float32)
    got = kael.gradient(k, spacing=kael.tensor(0.0))
    close_to_torch(got, torch.gradient(t, spacing=torch.tensor(0.0)), 0, equal_nan=True)
    e, te = make((0, 3), kael.float16)
    _grad_check(
        kael.gradient(e, spacing=kael.tensor(0.5), dim=1),
        torch.gradient(te, spacing=torch.tensor(0.5), dim=1),
        0,
    )
    k0, t0 = make((), kael.float64)
    assert (
        kael.gradient(k0, spacing=kael.tensor(2.0))
        == ()
        == torch.gradient(t0, spacing=torch.tensor(2.0))
    )


@pytest.mark.parametrize(
    ("kspacing", "tspacing", "error", "message"),
    [
        (kael.tensor([2.0]), torch.tensor([2.0]), kael.TypeError, "not Tensor"),
        ([kael.tensor(2.0), kael.tensor(3.0)], [torch.tensor(2.0), torch.tensor(3.0)],
         kael.ValueError, "got an element with 0 dimensions"),
    ],
)  # fmt: skip
def test_gradient_spacing_tensor_must_be_0d_or_a_list_of_1d_as_torch(
    kspacing, tspacing, error, message
):
    """One 1-element 1-d tensor is no scalar, and a list's tensors are coordinates (1-d)."""
    with pytest.raises((TypeError, RuntimeError)):
        torch.gradient(
            torch.ones(3, 4), spacing=tspacing, dim=None if message != "not Tensor" else 0
        )
    with pytest.raises(error, match=message):
        kael.gradient(kael.ones(3, 4), spacing=kspacing, dim=None if message != "not Tensor" else 0)
