"""addcmul, addcdiv, addmm, baddbmm, addbmm, addmv, addr and trace (frontend/blas_like.py)
against PyTorch: values, dtype and shape over contiguous, transposed, sliced, expanded,
0-d and empty operands and each dtype they take, the in-place forms and out=, and the
typed errors for what PyTorch refuses."""

import pytest
import torch
from parity_helpers import LAYOUTS, close_to_torch
from parity_helpers import layout_pair as make

import kael

FLOATS = [kael.float32, kael.float64, kael.float16, kael.bfloat16]
TOL = {kael.float32: 1e-5, kael.float64: 1e-12, kael.float16: 2e-3, kael.bfloat16: 1.6e-2}


def check(k, t, dtype=None):
    tol = TOL.get(dtype or k.dtype, 0)
    close_to_torch(k, t, tol, equal_nan=True)


# ---- addcmul, addcdiv ------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [*FLOATS, kael.int64], ids=str)
@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_pointwise_combinations_match_torch_across_layouts_and_dtypes(name, dtype, layout):
    if name == "addcdiv" and dtype is kael.int64:
        pytest.skip("integer division is refused (tested below)")
    kx, tx = make((3, 4), dtype, layout)
    ka, ta = make((3, 4), dtype, layout)
    kb, tb = make((3, 4), dtype, layout, low=1)  # no division by 0
    for value in (1, 2, -0.5):
        if dtype is kael.int64 and isinstance(value, float):
            continue
        got = getattr(kael, name)(kx, ka, kb, value=value)
        check(got, getattr(torch, name)(tx, ta, tb, value=value))
        check(getattr(kx, name)(ka, kb, value=value), getattr(tx, name)(ta, tb, value=value))


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_pointwise_combinations_broadcast_zero_d_and_empty_operands(name):
    cases = [((3, 1), (1, 4), (4,)), ((), (2, 3), ()), ((0, 3), (3,), (1, 3)), ((), (), ())]
    for shapes in cases:
        (kx, tx), (ka, ta), (kb, tb) = (make(s, low=1) for s in shapes)
        check(getattr(kael, name)(kx, ka, kb, value=3), getattr(torch, name)(tx, ta, tb, value=3))


def test_addcmul_promotes_mixed_dtypes_as_torch():
    cases = [
        ((2, 3), kael.float32, (2, 3), kael.int64, (2, 3), kael.int64),
        ((2, 3), kael.int64, (2, 3), kael.float32, (2, 3), kael.float64),
        ((), kael.int32, (), kael.int32, (2,), kael.int64),
        ((2,), kael.int32, (), kael.float32, (2,), kael.int64),
        ((2,), kael.float16, (2,), kael.float32, (1,), kael.float32),
        ((2,), kael.bool, (2,), kael.int64, (2,), kael.int32),
    ]
    for sx, dx, sa, da, sb, db in cases:
        (kx, tx), (ka, ta), (kb, tb) = make(sx, dx, low=0, high=2), make(sa, da), make(sb, db)
        check(kael.addcmul(kx, ka, kb, value=2), torch.addcmul(tx, ta, tb, value=2))


def test_addcmul_truncates_a_float_value_for_an_integer_result_as_torch():
    (kx, tx), (ka, ta), (kb, tb) = (make((5,), kael.int64) for _ in range(3))
    for value in (0.5, 1.5, -2.7, True):
        check(kael.addcmul(kx, ka, kb, value=value), torch.addcmul(tx, ta, tb, value=value))


def test_addcdiv_divides_truly_when_either_tensor_is_float():
    kx, tx = make((4,), kael.int64)
    ka, ta = make((4,), kael.int64)
    kb, tb = make((4,), kael.float32, low=1)
    check(kael.addcdiv(kx, ka, kb, value=0.5), torch.addcdiv(tx, ta, tb, value=0.5))
    check(kael.addcdiv(kx, kb, ka.abs() + 1), torch.addcdiv(tx, tb, ta.abs() + 1))


def test_addcdiv_refuses_integer_division_as_torch():
    i = kael.ones(2, dtype=kael.int64)
    for args in ((i, i, i), (i.float(), i, i), (i.float(), i.bool(), i.int())):
        with pytest.raises(kael.TypeError, match=r"addcdiv\(\): integer division"):
            kael.addcdiv(*args)


def test_pointwise_combinations_refuse_bool_bad_shapes_and_non_tensors():
    b, f = kael.ones(2, dtype=kael.bool), kael.ones(2, 3)
    with pytest.raises(kael.TypeError, match="addcmul.*bool"):
        kael.addcmul(b, b, b)
    with pytest.raises(kael.ValueError, match=r"\[2, 3\].*\[4\]|3.*4"):
        kael.addcmul(f, f, kael.ones(4))
    with pytest.raises(kael.TypeError, match=r"addcmul\(\): tensor1 must be a Tensor, got float"):
        kael.addcmul(f, 1.0, f)
    with pytest.raises(kael.TypeError, match=r"addcdiv\(\): value must be a real number"):
        kael.addcdiv(f, f, f, value="2")
    with pytest.raises(kael.ValueError, match=r"value must be a number or a 0-d tensor.*\[2\]"):
        kael.addcmul(f, f, f, value=kael.ones(2))


def test_pointwise_combinations_take_a_zero_d_tensor_value():
    (kx, tx), (ka, ta), (kb, tb) = (make((3,), low=1) for _ in range(3))
    got = kael.addcdiv(kx, ka, kb, value=kael.tensor(2.0))
    check(got, torch.addcdiv(tx, ta, tb, value=torch.tensor(2.0)))


# ---- the matrix family -----------------------------------------------------------------------


def _matrix_operands(name, layout, dtype, input_shape):
    """(kael args, torch args) for `name`: input of input_shape (None: the result's shape)."""
    shapes = {
        "addmm": ((3, 5), (5, 4), (3, 4)),
        "baddbmm": ((2, 3, 5), (2, 5, 4), (2, 3, 4)),
        "addbmm": ((2, 3, 5), (2, 5, 4), (3, 4)),
        "addmv": ((3, 5), (5,), (3,)),
        "addr": ((3,), (4,), (3, 4)),
    }[name]
    a, b, result = shapes
    ki, ti = make(result if input_shape is None else input_shape, dtype, layout)
    (ka, ta), (kb, tb) = make(a, dtype, layout), make(b, dtype, layout)
    return (ki, ka, kb), (ti, ta, tb)


MATRIX_OPS = ["addmm", "baddbmm", "addbmm", "addmv", "addr"]
SCALARS = [(1, 1), (0.5, 2), (0, 1), (2, 0), (0, 0), (-1, 3)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [*FLOATS, kael.int64, kael.int32], ids=str)
@pytest.mark.parametrize("name", MATRIX_OPS)
def test_matrix_family_matches_torch_across_layouts_dtypes_and_scalars(name, dtype, layout):
    k, t = _matrix_operands(name, layout, dtype, None)
    for beta, alpha in SCALARS:
        floats = isinstance(beta, float) or isinstance(alpha, float)
        if name == "addr" and floats and not dtype.is_floating_point:
            continue  # refused (tested below)
        got = getattr(kael, name)(*k, beta=beta, alpha=alpha)
        check(got, getattr(torch, name)(*t, beta=beta, alpha=alpha))
    check(getattr(k[0], name)(*k[1:], alpha=2), getattr(t[0], name)(*t[1:], alpha=2))


@pytest.mark.parametrize("name", MATRIX_OPS)
def test_matrix_family_broadcasts_input_to_the_result_shape(name):
    result_rank = {"addmm": 2, "baddbmm": 3, "addbmm": 2, "addmv": 1, "addr": 2}[name]
    for shape in [(), (1,), (4,) if result_rank > 1 else (3,), (3, 1)[-result_rank:]]:
        k, t = _matrix_operands(name, "contiguous", kael.float32, shape)
        check(getattr(kael, name)(*k, beta=2), getattr(torch, name)(*t, beta=2))


@pytest.mark.parametrize("name", ["addmm", "addbmm", "addr"])
def test_beta_zero_ignores_nan_and_inf_in_input(name):
    k, t = _matrix_operands(name, "contiguous", kael.float32, None)
    ki, ti = kael.full(k[0].shape, float("nan")), torch.full(t[0].shape, float("nan"))
    ki[0, 0], ti[0, 0] = float("inf"), float("inf")
    got = getattr(kael, name)(ki, *k[1:], beta=0, alpha=2)
    check(got, getattr(torch, name)(ti, *t[1:], beta=0, alpha=2))
    assert not got.isnan().any().item()


def test_alpha_zero_skips_the_matrix_product_but_not_addr_outer_product():
    k, t = _matrix_operands("addmm", "contiguous", kael.float32, None)
    k[1][0, 0], t[1][0, 0] = float("inf"), float("inf")
    check(kael.addmm(*k, alpha=0), torch.addmm(*t, alpha=0))
    k, t = _matrix_operands("addr", "contiguous", kael.float32, None)
    k[1][0], t[1][0] = float("inf"), float("inf")
    got = kael.addr(*k, alpha=0)
    check(got, torch.addr(*t, alpha=0))
    assert got[0].isnan().all().item()


def test_matrix_family_with_empty_operands_matches_torch():
    cases = [
        ("addmm", [(2, 3), (2, 0), (0, 3)]),
        ("addmm", [(0, 3), (0, 4), (4, 3)]),
        ("baddbmm", [(0, 2, 3), (0, 2, 4), (0, 4, 3)]),
        ("addbmm", [(2, 3), (0, 2, 4), (0, 4, 3)]),
        ("addmv", [(2,), (2, 0), (0,)]),
        ("addr", [(0, 3), (0,), (3,)]),
    ]
    for name, shapes in cases:
        k, t = zip(*(make(s) for s in shapes))
        check(getattr(kael, name)(*k, beta=2, alpha=3), getattr(torch, name)(*t, beta=2, alpha=3))


def test_integral_matrix_family_truncates_float_scalars_as_torch():
    for name in ["addmm", "baddbmm", "addbmm", "addmv"]:
        k, t = _matrix_operands(name, "contiguous", kael.int64, None)
        got = getattr(kael, name)(*k, beta=2.7, alpha=1.5)
        check(got, getattr(torch, name)(*t, beta=2.7, alpha=1.5))


def test_addr_promotes_mixed_dtypes_and_combines_bools_logically():
    for dtypes in [
        (kael.int64, kael.int64, kael.float32),
        (kael.float32, kael.bool, kael.bool),
        (kael.int32, kael.int64, kael.int32),
        (kael.bool, kael.bool, kael.bool),
    ]:
        (ki, ti), (ka, ta), (kb, tb) = (
            make(s, d, low=0, high=2) for s, d in zip([(2, 3), (2,), (3,)], dtypes)
        )
        for beta, alpha in [(1, 1), (0, 1), (1, 0), (2, 3)]:
            got = kael.addr(ki, ka, kb, beta=beta, alpha=alpha)
            check(got, torch.addr(ti, ta, tb, beta=beta, alpha=alpha))


def test_addr_refuses_float_scalars_for_integral_results_as_torch():
    i = kael.ones(2, dtype=kael.int64)
    with pytest.raises(
        kael.TypeError, match=r"addr\(\): .*argument alpha must not be a float.*1.5"
    ):
        kael.addr(kael.ones(2, 2, dtype=kael.int64), i, i, alpha=1.5)
    b = i.bool()
    with pytest.raises(kael.TypeError, match=r"argument beta must not be a floating point"):
        kael.addr(kael.ones(2, 2, dtype=kael.bool), b, b, beta=0.5)


def test_addr_refuses_bool_scalars_for_non_bool_results_as_torch():
    f = kael.ones(2)
    with pytest.raises(kael.TypeError, match=r"addr\(\): a bool alpha \(alpha=True\) .* float32"):
        kael.addr(kael.ones(2, 2), f, f, alpha=True)
    with pytest.raises(kael.TypeError, match=r"addr\(\): a bool beta"):
        kael.addr(kael.ones(2, 2, dtype=kael.int64), f.long(), f.long(), beta=False)
    b = f.bool()
    check(
        kael.addr(b.view(2, 1), b, b, beta=False, alpha=True),
        torch.addr(
            torch.ones(2, 1).bool(),
            torch.ones(2).bool(),
            torch.ones(2).bool(),
            beta=False,
            alpha=True,
        ),
    )


@pytest.mark.parametrize("name", ["addmm", "baddbmm", "addbmm", "addmv"])
def test_matrix_products_refuse_mixed_dtypes_and_bool(name):
    k, _ = _matrix_operands(name, "contiguous", kael.float32, None)
    with pytest.raises(
        kael.TypeError, match=rf"{name}\(\): input and \w+ must have the same dtype"
    ):
        getattr(kael, name)(k[0].double(), *k[1:])
    with pytest.raises(
        kael.TypeError, match=r"must have the same dtype, but got float32 and float64"
    ):
        getattr(kael, name)(k[0], k[1], k[2].double())
    with pytest.raises(kael.TypeError, match=rf"{name}.*not implemented for dtype bool"):
        getattr(kael, name)(*(x.bool() for x in k))


def test_matrix_family_refuses_wrong_ranks():
    m, v, b = kael.ones(2, 2), kael.ones(2), kael.ones(2, 2, 2)
    cases = [
        (kael.addmm, (m, v, m), r"addmm: mat1 must be a 2-D tensor, but got a 1-D tensor of shape \[2\]"),
        (kael.addmm, (m, m, b), r"addmm: mat2 must be a 2-D tensor, but got a 3-D"),
        (kael.baddbmm, (b, m, b), r"baddbmm: batch1 must be a 3-D tensor, but got a 2-D"),
        (kael.addbmm, (m, b, m), r"addbmm: batch2 must be a 3-D tensor"),
        (kael.addmv, (v, m, m), r"addmv: vec must be a 1-D tensor, but got a 2-D"),
        (kael.addmv, (v, v, v), r"addmv: mat must be a 2-D tensor"),
        (kael.addr, (m, m, v), r"addr: vec1 must be a 1-D tensor, but got a 2-D"),
    ]  # fmt: skip
    for fn, args, message in cases:
        with pytest.raises(kael.ValueError, match=message):
            fn(*args)


def test_matrix_family_refuses_mismatched_shapes():
    f = kael.ones
    cases = [
        (kael.addmm, (f(3), f(2, 4), f(2, 4)), r"addmm\(\): mat1 \[2, 4\] and mat2 \[2, 4\] cannot be multiplied: 4 columns and 2 rows"),
        (kael.addmm, (f(4), f(2, 4), f(4, 3)), r"input of shape \[4\] cannot be broadcast to the result's shape \[2, 3\]"),
        (kael.addmm, (f(2, 2, 3), f(2, 4), f(4, 3)), r"input of shape \[2, 2, 3\] cannot be broadcast"),
        (kael.baddbmm, (f(3), f(2, 2, 4), f(3, 4, 3)), r"same number of batches, got 2 and 3"),
        (kael.baddbmm, (f(3), f(2, 2, 4), f(2, 5, 3)), r"\[2, 2, 4\] and \[2, 5, 3\]: 4 columns and 5 rows"),
        (kael.addbmm, (f(3), f(2, 2, 4), f(3, 4, 3)), r"addbmm\(\): .*got 2 and 3"),
        (kael.addmv, (f(2), f(2, 4), f(3)), r"addmv\(\): mat \[2, 4\] and vec \[3\] cannot be multiplied: 4 columns and 3 rows"),
        (kael.addmv, (f(3), f(2, 4), f(4)), r"input of shape \[3\] cannot be broadcast to the result's shape \[2\]"),
        (kael.addr, (f(4), f(2), f(3)), r"addr\(\): input of shape \[4\] cannot be broadcast"),
    ]  # fmt: skip
    for fn, args, message in cases:
        with pytest.raises(kael.ValueError, match=message):
            fn(*args)


def test_matrix_family_refuses_non_tensors_and_bad_scalars():
    m = kael.ones(2, 2)
    with pytest.raises(kael.TypeError, match=r"addmm\(\): input must be a Tensor, got list"):
        kael.addmm([1.0], m, m)
    with pytest.raises(kael.TypeError, match=r"addmm\(\): mat2 must be a Tensor, got int"):
        kael.addmm(m, m, 2)
    with pytest.raises(kael.TypeError, match=r"addmv\(\): alpha must be a real number, got 'x'"):
        kael.addmv(kael.ones(2), m, kael.ones(2), alpha="x")
    with pytest.raises(kael.TypeError, match=r"beta must be a real number, got \(1\+2j\)"):
        kael.addmm(m, m, m, beta=1 + 2j)


# ---- in place and out= -----------------------------------------------------------------------


@pytest.mark.parametrize("name", [*MATRIX_OPS, "addcmul", "addcdiv"])
def test_in_place_forms_write_self_and_return_it(name):
    if name in ("addcmul", "addcdiv"):
        (kx, tx), (ka, ta), (kb, tb) = (make((2, 3), low=1) for _ in range(3))
        k, t, kwargs = (kx, ka, kb), (tx, ta, tb), {"value": 2}
    else:
        k, t = _matrix_operands(name, "contiguous", kael.float64, None)
        kwargs = {"beta": 0.5, "alpha": 2}
    got = getattr(k[0], f"{name}_")(*k[1:], **kwargs)
    getattr(t[0], f"{name}_")(*t[1:], **kwargs)
    assert got is k[0]
    check(k[0], t[0])


def test_in_place_forms_refuse_a_shape_change_and_a_wider_result():
    m = kael.ones(2, 3)
    with pytest.raises(
        kael.ValueError, match=r"addmm_: output with shape \[3\] doesn't match .*\[2, 3\]"
    ):
        kael.ones(3).addmm_(kael.ones(2, 4), kael.ones(4, 3))
    with pytest.raises(kael.ValueError, match=r"addcmul_: output with shape \[3\]"):
        kael.ones(3).addcmul_(m, m)
    with pytest.raises(
        kael.TypeError, match=r"addcmul_: result type float32 can't be cast .* int64"
    ):
        kael.ones(2, 3, dtype=kael.int64).addcmul_(m, m)
    with pytest.raises(kael.TypeError, match=r"addr_: result type float32 can't be cast"):
        kael.ones(3, 3, dtype=kael.int64).addr_(kael.ones(3), kael.ones(3))


def test_in_place_addr_keeps_self_dtype_as_torch():
    k = kael.ones(3, 3)
    t = torch.ones(3, 3)
    k.addr_(kael.arange(3.0, dtype=kael.float64), kael.ones(3))
    t.addr_(torch.arange(3.0, dtype=torch.float64), torch.ones(3))
    check(k, t)


@pytest.mark.parametrize("name", [*MATRIX_OPS, "addcmul"])
def test_out_receives_the_result(name):
    if name == "addcmul":
        (kx, tx), (ka, ta), (kb, tb) = (make((2, 3)) for _ in range(3))
        k, t = (kx, ka, kb), (tx, ta, tb)
    else:
        k, t = _matrix_operands(name, "contiguous", kael.float32, None)
    want = getattr(torch, name)(*t)
    out = kael.empty(*want.shape)
    assert getattr(kael, name)(*k, out=out) is out
    check(out, want)
    wide = kael.empty(*want.shape, dtype=kael.float64)
    if name in ("addcmul", "addr"):  # torch's TensorIterator ops: cast into the float64 out
        assert getattr(kael, name)(*k, out=wide) is wide
        check(wide, want.double())
        return
    with pytest.raises(kael.TypeError, match=rf"{name}: out has dtype float64 but the result"):
        getattr(kael, name)(*k, out=wide)


# ---- trace -----------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    "dtype", [*FLOATS, kael.int64, kael.int32, kael.int16, kael.uint8], ids=str
)
def test_trace_matches_torch_and_sums_integers_in_int64(dtype, layout):
    for shape in [(4, 4), (3, 5), (5, 2), (0, 3), (1, 1)]:
        k, t = make(shape, dtype, layout, low=0)
        check(kael.trace(k), torch.trace(t))
        check(k.trace(), t.trace())


def test_trace_refuses_non_matrices_and_bool():
    for shape in [(), (3,), (2, 2, 2)]:
        with pytest.raises(
            kael.ValueError,
            match=rf"trace\(\): expected a matrix, but got a tensor with {len(shape)} dims",
        ):
            kael.trace(kael.ones(*shape))
    with pytest.raises(kael.TypeError, match=r"trace.*not implemented for dtype bool"):
        kael.trace(kael.ones(2, 2, dtype=kael.bool))


# ---- compile ---------------------------------------------------------------------------------


def test_the_family_runs_inside_compile_with_eagers_values():
    def f(x, m1, m2, v):
        y = kael.addmm(x, m1, m2, beta=0.5, alpha=2)
        return kael.addcmul(y, y, y, value=0.25) + kael.trace(y) + kael.addmv(v[:3], y, v)[0]

    k, _ = _matrix_operands("addmm", "contiguous", kael.float32, None)
    v = kael.ones(4)
    eager = f(*k, v)
    compiled = kael.compile(f)
    for _ in range(2):
        check(compiled(*k, v), torch.from_dlpack(eager.contiguous()))
