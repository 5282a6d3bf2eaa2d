"""einsum, tensordot, kron and cdist (frontend/contractions.py) against PyTorch: values,
dtype and shape over equations with repeated indices, ellipsis, implicit outputs, many
operands, layouts and dtypes; typed errors for bad equations and shapes."""

import numpy as np
import pytest
import torch
from parity_helpers import close_to_torch, matrix_pair
from parity_helpers import torch_pair as pair

import kael
from kael.frontend import contractions

RNG = np.random.default_rng(43)


def _operands(*shapes, dtype=kael.float32):
    made = [pair(RNG.standard_normal(s), dtype) for s in shapes]
    return [k for k, _ in made], [t for _, t in made]


EQUATIONS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 6)]),
    ("...ij,jk->...ik", [(2, 3, 4, 5), (5, 6)]),
    ("bhid,bhjd->bhij", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("iij->j", [(3, 3, 2)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("bij,bjk->bik", [(1, 3, 4), (5, 4, 2)]),  # a size-1 batch broadcasts
    ("ij,jk->ik", [(3, 1), (4, 5)]),  # so does a size-1 summed index: no matmul's shapes
    ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]),
    ("i,i,i->i", [(4,), (4,), (4,)]),
]


@pytest.mark.parametrize("equation, shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_matches_torch(equation, shapes):
    ks, ts = _operands(*shapes)
    close_to_torch(kael.einsum(equation, *ks), torch.einsum(equation, *ts), 2e-5)
    close_to_torch(kael.einsum(equation, ks), torch.einsum(equation, ts), 2e-5)  # a list


@pytest.mark.parametrize(
    "equation, shapes",
    [("i,j->ij", [(3,), (4,)]), ("i,i->i", [(3,), (3,)]), ("ij,j->ij", [(2, 3), (3,)]),
     ("i,j,k->ijk", [(2,), (3,), (2,)]), ("bi,bj->bij", [(2, 3), (2, 4)])],
    ids=str,
)  # fmt: skip
def test_einsum_with_nothing_to_sum_multiplies_bool_as_torch(equation, shapes):
    made = [pair(RNG.integers(0, 2, s).astype(bool), kael.bool) for s in shapes]
    ks, ts = [k for k, _ in made], [t for _, t in made]
    close_to_torch(kael.einsum(equation, *ks), torch.einsum(equation, *ts), 0)


def test_einsum_outer_product_keeps_negative_zero():
    (ka, ta), (kb, tb) = pair([-0.0, 2.0]), pair([1.0, -0.0])
    got = kael.einsum("i,j->ij", ka, kb)
    want = torch.einsum("i,j->ij", ta, tb)
    assert torch.equal(torch.from_numpy(got.numpy()).signbit(), want.signbit())


def test_einsum_of_transposed_float64_and_int64_operands():
    ks, ts = _operands((4, 3), (5, 4), dtype=kael.float64)
    close_to_torch(
        kael.einsum("ji,kj->ik", ks[0], ks[1]), torch.einsum("ji,kj->ik", ts[0], ts[1]), 1e-12
    )
    ki, ti = pair(RNG.integers(-5, 5, (3, 4)), kael.int64)
    close_to_torch(kael.einsum("ij,ij->i", ki, ki), torch.einsum("ij,ij->i", ti, ti), 0)
    ke, te = _operands((0, 4), (4, 3))
    close_to_torch(kael.einsum("ij,jk->ik", *ke), torch.einsum("ij,jk->ik", *te), 0)


MATMUL_EQUATIONS = [
    ("ij,jk->ik", [(4, 16), (16, 8)]),
    ("ij,jk", [(1, 5), (5, 3)]),
    ("ab,bc->ac", [(0, 4), (4, 3)]),
    ("ij,jk->ik", [(3, 0), (0, 2)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 6)]),
    ("...ij,...jk", [(3, 2, 7), (3, 7, 1)]),
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
@pytest.mark.parametrize("equation, shapes", MATMUL_EQUATIONS, ids=str)
def test_einsum_of_a_matmul_equation_is_matmul(equation, shapes, dtype, layout, monkeypatch):
    (ka, ta), (kb, tb) = (matrix_pair(RNG.standard_normal(s), dtype, layout) for s in shapes)
    monkeypatch.setattr(contractions, "_contracted", None)  # matmul's own shapes skip it
    got = kael.einsum(equation, ka, kb)
    close_to_torch(got, torch.einsum(equation, ta, tb), 1e-5)
    assert got.is_contiguous()
    assert got.numpy().tobytes() == kael.matmul(ka, kb).numpy().tobytes()


def test_einsum_refuses_an_equation_that_is_not_a_str():
    with pytest.raises(kael.TypeError, match="the equation must be a str, not list"):
        kael.einsum(["ij"], kael.ones(2, 3))


@pytest.mark.parametrize(
    "equation, shapes, message",
    [
        ("ij,jk->ik", [(3, 4)], "operands"),
        ("ij,jk->ik", [(3, 4), (5, 6)], "size"),
        ("ij->ik", [(3, 4)], "appears in no operand"),
        ("ijk->i", [(3, 4)], "indices"),
        ("ij->ii", [(3, 4)], "repeats"),
        ("i1->i", [(3, 4)], "invalid subscript"),
    ],
)
def test_einsum_refuses_bad_equations(equation, shapes, message):
    ks, _ = _operands(*shapes)
    with pytest.raises(kael.ValueError, match=message):
        kael.einsum(equation, *ks)


SUBLISTS = [
    ([(3, 4), (4, 5)], [[0, 1], [1, 2]], None),
    ([(3, 4), (4, 5)], [[0, 51], [51, 26]], [26, 0]),
    ([(2, 3, 4), (4, 5)], [[Ellipsis, 1], [1, 2]], [Ellipsis, 2]),
    ([(4, 4)], [[7, 7]], []),
    ([(3, 4), (4, 5)], [kael.tensor([0, 1]), np.array([1, 2])], (0, 2)),
]


@pytest.mark.parametrize("shapes, sublists, output", SUBLISTS, ids=str)
def test_einsum_takes_torchs_sublist_form(shapes, sublists, output):
    ks, ts = _operands(*shapes)
    kargs = [a for pair_ in zip(ks, sublists) for a in pair_]
    plain = [s.tolist() if hasattr(s, "tolist") else s for s in sublists]  # torch's own lists
    targs = [a for pair_ in zip(ts, plain) for a in pair_]
    if output is not None:
        kargs, targs = [*kargs, output], [*targs, output]
    close_to_torch(kael.einsum(*kargs), torch.einsum(*targs), 2e-5)


@pytest.mark.parametrize(
    "args, error, message",
    [
        (([0, 52],), kael.ValueError, r"valid range \[0, 52\), got 52"),
        (([0, -1],), kael.ValueError, r"valid range \[0, 52\), got -1"),
        (([0, 1.0],), kael.TypeError, "subscript must be an int, got float"),
        ((7,), kael.TypeError, "expected a list of subscripts, got int"),
    ],
)
def test_einsum_sublists_refuse_bad_subscripts(args, error, message):
    with pytest.raises(error, match=message):
        kael.einsum(kael.ones(2, 3), *args)


@pytest.mark.parametrize("dims", [0, 1, 2, ([1, 2], [1, 0]), ([2], [0])], ids=str)
def test_tensordot_matches_torch(dims):
    ka, ta = pair(RNG.standard_normal((3, 4, 4)))
    kb, tb = pair(RNG.standard_normal((4, 4, 2)))
    close_to_torch(kael.tensordot(ka, kb, dims), torch.tensordot(ta, tb, dims), 2e-5)
    with pytest.raises(kael.ValueError, match="contracted dimensions need to match"):
        kael.tensordot(ka, kb[:3], 1)


@pytest.mark.parametrize(
    "dims", [([1, -1], [0, 1]), ([0, 1], [1, -1]), ([1, 1], [0, 0]), ([0, 1], [1, 1])], ids=str
)
def test_tensordot_refuses_a_dim_listed_twice_as_torch(dims):
    with pytest.raises(RuntimeError) as expected:
        torch.tensordot(torch.ones(3, 3), torch.ones(3, 3), dims)
    with pytest.raises(kael.ValueError) as got:
        kael.tensordot(kael.ones(3, 3), kael.ones(3, 3), dims)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("shapes", [((2, 3), (4, 5)), ((3,), (2, 2)), ((2, 1, 3), (3, 2))], ids=str)
def test_kron_matches_torch(shapes):
    ks, ts = _operands(*shapes)
    close_to_torch(kael.kron(*ks), torch.kron(*ts), 1e-6)


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, float("inf")])
@pytest.mark.parametrize("rows", [(5, 7), (40, 30)], ids=["direct", "through_matmul"])
def test_cdist_matches_torch(p, rows):
    (ka, kb), (ta, tb) = _operands((2, rows[0], 8), (2, rows[1], 8))
    close_to_torch(kael.cdist(ka, kb, p), torch.cdist(ta, tb, p), 3e-5)
    mode = "donot_use_mm_for_euclid_dist"
    close_to_torch(kael.cdist(ka, kb, p, mode), torch.cdist(ta, tb, p, mode), 3e-5)


@pytest.mark.parametrize("rows", [(2, 3), (30, 40)], ids=["direct", "through_matmul"])
def test_cdist_with_p_0_keeps_nan_as_torch(rows):
    (ka, kb), (ta, tb) = _operands((*rows[:1], 4), (*rows[1:], 4))
    for k, t in ((ka, ta), (kb, tb)):
        k[0, 1], t[0, 1] = float("nan"), float("nan")
        k[-1, 2], t[-1, 2] = float("inf"), float("inf")
    close_to_torch(kael.cdist(ka, kb, 0.0), torch.cdist(ta, tb, 0.0), 0, equal_nan=True)


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, float("inf")])
@pytest.mark.parametrize("rows", [(3, 2), (30, 40)], ids=["direct", "through_matmul"])
def test_cdist_without_features_is_zero_for_every_p(p, rows):
    a, b = (2, rows[0], 0), (1, rows[1], 0)
    got = kael.cdist(kael.zeros(a), kael.zeros(b), p)
    close_to_torch(got, torch.cdist(torch.zeros(a), torch.zeros(b), p), 0)


def test_cdist_refuses_bad_inputs():
    x = kael.randn(3, 4)
    with pytest.raises(kael.ValueError, match="same number of columns"):
        kael.cdist(x, kael.randn(3, 5))
    with pytest.raises(kael.ValueError, match="non-negative"):
        kael.cdist(x, x, -1.0)
    with pytest.raises(kael.ValueError, match="at least 2D"):
        kael.cdist(x[0], x)


@pytest.mark.parametrize(
    "equation, shape",
    [("ij->ji", (3, 3)), ("ii->i", (3, 3)), ("ji", (3, 3)), ("ij->ij", (3, 3)),
     ("iij->ji", (3, 3, 4)), ("...ij->...ji", (2, 3, 4))],
)  # fmt: skip
def test_einsum_of_one_operand_that_sums_nothing_is_a_view_as_torchs(equation, shape):
    t = torch.arange(float(np.prod(shape))).reshape(shape)
    k = kael.from_numpy(t.numpy().copy())
    got, want = kael.einsum(equation, k), torch.einsum(equation, t)
    assert got.shares_storage(k) and got.stride() == want.stride()
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    got.fill_(-1.0)  # a write through it reaches the operand, as through torch's view
    want.fill_(-1.0)
    np.testing.assert_array_equal(k.numpy(), t.numpy())


def test_einsum_that_sums_or_multiplies_is_a_new_tensor():
    x = kael.ones(3, 3)
    assert not kael.einsum("ij->j", x).shares_storage(x)
    assert not kael.einsum("ij,ij->ij", x, x).shares_storage(x)


PLANNED = [
    ("ii->i", [(5, 5)]),
    ("ij->ji", [(4, 6)]),
    ("bi,bij,bj->b", [(4, 6), (4, 6, 7), (4, 7)]),
    ("...ij,...jk", [(2, 3, 4), (1, 4, 5)]),
    ("iij->j", [(3, 3, 4)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("i,j->ij", [(3,), (4,)]),
]


@pytest.mark.parametrize("equation, shapes", PLANNED, ids=[e for e, _ in PLANNED])
def test_a_large_einsum_runs_its_own_plan_with_the_eager_bits(monkeypatch, equation, shapes):
    """From PLANNED_FROM_BYTES (here 0) an eager einsum replays a plan of kael's own: the
    eager path's values, dtype and shape, and a view of an operand where eager gives one."""
    rng = np.random.default_rng(5)
    xs = [kael.tensor(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    eager = kael.einsum(equation, *xs)
    monkeypatch.setattr(contractions, "PLANNED_FROM_BYTES", 0)
    for _ in range(2):  # the trace, then the replay
        planned = kael.einsum(equation, *xs)
        assert planned.shape == eager.shape and planned.dtype is eager.dtype
        np.testing.assert_array_equal(planned.numpy(), eager.numpy())
        ptrs = {x.untyped_storage().data_ptr() for x in xs}
        assert (planned.untyped_storage().data_ptr() in ptrs) == (
            eager.untyped_storage().data_ptr() in ptrs
        )
    assert contractions._PLAN.plan_for(equation, *xs) is not None


@pytest.mark.parametrize("dims", [1, [[1], [0]], [[0, 1], [1, 0]]], ids=str)
def test_tensordot_takes_its_dims_as_a_tensor_as_torch(dims):
    """A 0-d count, or the two dim lists as a 2-d tensor."""
    a = np.arange(12.0).reshape(3, 4)
    b = a.T.copy()  # [4, 3]: a's dim 1 against b's dim 0, and a's (0, 1) against b's (1, 0)
    got = kael.tensordot(kael.tensor(a), kael.tensor(b), dims=kael.tensor(dims))
    want = torch.tensordot(torch.tensor(a), torch.tensor(b), dims=torch.tensor(dims))
    close_to_torch(got, want, 1e-12)
