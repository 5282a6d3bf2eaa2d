"""Complex tensors (kael/frontend/complex.py) against torch: the promotion lattice and the
scalar rule, creation and interop, views of the parts, conversions, the arithmetic and
math that have a complex form, sum/mean, matmul, printing, and the refusal of every other
op with kael.TypeError."""

import itertools
import math
import operator
import warnings

import numpy as np
import pytest
import torch

import kael
from kael.runtime import dtypes

COMPLEX = ["complex64", "complex128"]
ALL = [d.name for d in (*dtypes.ALL_DTYPES, *dtypes.COMPLEX_DTYPES)]
RNG = np.random.default_rng(0)


def pair(shape, dtype="complex64", seed=0):
    """The same complex values as a kael and a torch tensor."""
    rng = np.random.default_rng(seed)
    values = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return kael.tensor(values), torch.tensor(values)


def close(got: kael.Tensor, want: torch.Tensor, rtol=None, atol=None):
    assert got.shape == tuple(want.shape)
    assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
    tight = want.dtype in (torch.complex128, torch.float64)
    rtol = rtol if rtol is not None else (1e-12 if tight else 2e-6)
    atol = atol if atol is not None else (1e-12 if tight else 1e-6)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=atol)


# ---- dtypes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("a, b", list(itertools.product(ALL, COMPLEX)))
def test_promote_types_matches_torch(a, b):
    want = torch.promote_types(getattr(torch, a), getattr(torch, b))
    expected = "complex64" if want is torch.complex32 else str(want)[6:]  # no complex32 here
    assert str(kael.promote_types(getattr(kael, a), getattr(kael, b))) == expected
    assert str(kael.promote_types(getattr(kael, b), getattr(kael, a))) == expected


@pytest.mark.parametrize("tensor_dtype", ["float32", "float64", "int64", "bool", "complex128"])
@pytest.mark.parametrize("other", ["scalar", "0-d complex64", "0-d complex128", "dims"])
def test_result_type_tiers_match_torch(tensor_dtype, other):
    k = kael.ones(2, dtype=getattr(kael, tensor_dtype))
    t = torch.ones(2, dtype=getattr(torch, tensor_dtype))
    if other == "scalar":
        ko, to = 1 + 2j, 1 + 2j
    elif other == "dims":
        ko, to = kael.ones(2, dtype=kael.complex64), torch.ones(2, dtype=torch.complex64)
    else:
        name = other.split()[1]
        ko, to = (
            kael.tensor(1j, dtype=getattr(kael, name)),
            torch.tensor(1j, dtype=getattr(torch, name)),
        )
    assert str(kael.result_type(k, ko)) == str(torch.result_type(t, to))[6:]
    assert str(kael.result_type(ko, k)) == str(torch.result_type(to, t))[6:]


def test_python_complex_follows_the_default_dtype():
    assert kael.tensor([1j]).dtype is kael.complex64
    kael.set_default_dtype(kael.float64)
    try:
        assert kael.tensor([1j]).dtype is kael.complex128
        assert (kael.ones(2, dtype=kael.int64) + 1j).dtype is kael.complex128
    finally:
        kael.set_default_dtype(kael.float32)


def test_dtype_names_aliases_and_limits():
    assert kael.cfloat is kael.complex64 and kael.cdouble is kael.complex128
    assert kael.complex64.is_complex and not kael.complex64.is_floating_point
    assert kael.finfo(kael.complex64) == kael.finfo(kael.float32)
    assert kael.finfo(kael.complex128).eps == torch.finfo(torch.complex128).eps
    assert kael.ones(2).cfloat().dtype is kael.complex64
    assert kael.ones(2).cdouble().dtype is kael.complex128


# ---- creation and interop ------------------------------------------------------------------------


def test_tensor_of_python_complex_numbers_matches_torch():
    data = [[1 + 2j, 3], [0.5, -1j], [True, 2.5 - 0.5j]]
    close(kael.tensor(data), torch.tensor(data))
    close(kael.tensor(data, dtype=kael.complex128), torch.tensor(data, dtype=torch.complex128))
    close(kael.tensor(1 + 2j), torch.tensor(1 + 2j))
    close(kael.tensor([1, 2], dtype=kael.complex64), torch.tensor([1, 2], dtype=torch.complex64))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_from_numpy_shares_memory_and_numpy_round_trips(dtype):
    array = (np.arange(6) + 1j * np.arange(6)[::-1]).astype(dtype).reshape(2, 3)
    t = kael.from_numpy(array)
    assert t.dtype is getattr(kael, dtype)
    array[0, 0] = 7 - 7j
    assert t[0, 0].item() == 7 - 7j and isinstance(t[0, 0].item(), complex)
    np.testing.assert_array_equal(t.numpy(), array)
    assert t.tolist() == array.tolist()
    close(kael.from_dlpack(torch.tensor(array)), torch.tensor(array))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_factories_fill_both_parts(dtype):
    kd, td = getattr(kael, dtype), getattr(torch, dtype)
    close(kael.zeros(2, 3, dtype=kd), torch.zeros(2, 3, dtype=td))
    close(kael.ones(2, dtype=kd), torch.ones(2, dtype=td))
    close(kael.full((3,), 2 - 1j, dtype=kd), torch.full((3,), 2 - 1j, dtype=td))
    close(kael.full((2,), 1.5 + 0.5j), torch.full((2,), 1.5 + 0.5j))
    z = kael.ones(2, dtype=kd)
    assert kael.zeros_like(z).dtype is kd and kael.empty(4, dtype=kd).shape == (4,)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_complex_and_polar_match_torch(dtype):
    re, im = (RNG.standard_normal((2, 3)).astype(dtype) for _ in range(2))
    k = [kael.tensor(v) for v in (re, im)]
    t = [torch.tensor(v) for v in (re, im)]
    close(kael.complex(*k), torch.complex(*t))
    close(kael.complex(k[0], k[1][0]), torch.complex(t[0], t[1][0]))  # broadcast
    close(kael.polar(kael.tensor(re).abs(), k[1]), torch.polar(torch.tensor(re).abs(), t[1]))


def test_complex_refuses_what_torch_refuses():
    with pytest.raises(kael.TypeError, match="Half, Float or Double tensors but got int64"):
        kael.complex(kael.ones(2, dtype=kael.int64), kael.ones(2, dtype=kael.int64))
    with pytest.raises(kael.TypeError, match="one dtype, got float32 and float64"):
        kael.complex(kael.ones(2), kael.ones(2, dtype=kael.float64))


# ---- views ------------------------------------------------------------------------------------


def test_view_as_real_and_back_share_memory_with_torchs_layout():
    k, t = pair((3, 4))
    kr, tr = kael.view_as_real(k[:, 1:]), torch.view_as_real(t[:, 1:])
    assert (kr.shape, kr.stride(), kr.storage_offset()) == (
        tuple(tr.shape),
        tr.stride(),
        tr.storage_offset(),
    )
    kr[0, 0, 1] = 9.0
    assert k[0, 1].item().imag == 9.0
    back = kael.view_as_complex(kr)
    assert back.shape == (3, 3) and back.dtype is kael.complex64
    assert back.stride() == torch.view_as_complex(tr).stride()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda L: L.view_as_real(L.ones(2)), "view_as_real is only supported for complex"),
        (lambda L: L.view_as_complex(L.ones(3)), "last dimension of size 2"),
        (lambda L: L.view_as_complex(L.ones(2, 2)[:, :1].expand(2, 2)), "stride 1"),
        (lambda L: L.view_as_complex(L.ones(4)[1:3]), "storage_offset divisible by 2"),
        (lambda L: L.view_as_complex(L.ones(3, 5)[:, 2:4]), "stride divisible by 2"),
    ],
)
def test_view_as_complex_and_real_refuse_as_torch(make, message):
    with pytest.raises(RuntimeError, match=message):
        make(torch)
    with pytest.raises(kael.Error, match=message):
        make(kael)


def test_view_as_complex_refuses_other_dtypes_and_0d():
    with pytest.raises(kael.TypeError, match="float and double tensors, but got .* float16"):
        kael.view_as_complex(kael.ones(2, dtype=kael.float16))
    with pytest.raises(kael.ValueError, match="one or more dimensions"):
        kael.view_as_complex(kael.tensor(1.0))


def test_real_and_imag_are_writable_views_and_a_real_tensor_has_no_imag():
    k, t = pair((2, 2))
    close(k.real, t.real)
    close(k.imag, t.imag)
    k.imag[0, 0] = 5.0
    k.real = kael.zeros(2, 2)
    assert k[0, 0].item() == 5j
    assert kael.real(kael.ones(2)).dtype is kael.float32
    with pytest.raises(
        kael.TypeError, match="imag is not implemented for tensors with non-complex"
    ):
        _ = kael.ones(2).imag


# ---- conversions and copies -----------------------------------------------------------------------


@pytest.mark.parametrize("src", ["float32", "int64", "bool", "complex128"])
@pytest.mark.parametrize("dst", COMPLEX)
def test_conversions_into_complex_match_torch(src, dst):
    values = np.array([1.5, -2.0, 0.0, 3.0])
    if src == "complex128":
        values = values + 1j * values[::-1]
    k = kael.tensor(values).to(getattr(kael, src))
    t = torch.tensor(values).to(getattr(torch, src))
    close(k.to(getattr(kael, dst)), t.to(getattr(torch, dst)))


@pytest.mark.parametrize("dst", ["float32", "float64", "int64"])
def test_complex_to_real_keeps_the_real_part_and_warns_as_torch(dst):
    k, t = pair((5,), "complex128")
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        got = k.to(getattr(kael, dst))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = t.to(getattr(torch, dst))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_complex_to_bool_is_nonzero_in_either_part():
    values = [0j, 1j, 1 + 0j, complex(0.0, -0.0)]
    got = kael.tensor(values).bool()
    np.testing.assert_array_equal(got.numpy(), torch.tensor(values).bool().numpy())


def test_copies_clone_cat_stack_flip_and_indexing_keep_values():
    k, t = pair((3, 4))
    close(k.clone(), t.clone())
    close(k.t().contiguous(), t.t().contiguous())
    close(kael.cat([k, k[:1]]), torch.cat([t, t[:1]]))
    close(kael.stack([k, k], dim=1), torch.stack([t, t], dim=1))
    close(k.flip(0), t.flip(0))
    close(k[1:, ::2], t[1:, ::2])
    close(k.reshape(12)[kael.tensor([3, 0, 11])], t.reshape(12)[torch.tensor([3, 0, 11])])
    dst = kael.zeros(3, 4, dtype=kael.complex128)
    dst.copy_(k)
    close(dst, t.to(torch.complex128))


# ---- arithmetic ---------------------------------------------------------------------------------


def _operand(kind: str, seed: int):
    if kind == "complex":
        return pair((2, 3), seed=seed)
    if kind == "complex128 row":
        return pair((3,), "complex128", seed=seed)
    if kind == "float64":
        v = np.random.default_rng(seed).standard_normal((2, 3))
        return kael.tensor(v), torch.tensor(v)
    if kind == "int":
        v = np.arange(1, 4)
        return kael.tensor(v), torch.tensor(v)
    number = {"py complex": 0.5 - 2j, "py float": 2.5}[kind]
    return number, number


KINDS = ["complex", "complex128 row", "float64", "int", "py complex", "py float"]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "eq", "ne"])
@pytest.mark.parametrize(
    "left, right",
    [
        p
        for p in itertools.product(KINDS, KINDS)
        if "complex" in p[0] + p[1] and not (p[0].startswith("py") and p[1].startswith("py"))
    ],
)
def test_binary_ops_match_torch_over_operand_kinds(op, left, right):
    (ka, ta), (kb, tb) = _operand(left, 1), _operand(right, 2)
    if not isinstance(ka, kael.Tensor) and not isinstance(kb, kael.Tensor):
        return
    fn = getattr(operator, {"div": "truediv"}.get(op, op))  # a number may come first
    got, want = fn(ka, kb), fn(ta, tb)
    if op in ("eq", "ne"):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    else:
        close(got, want)


def test_division_by_zero_gives_torchs_infinities_and_nans():
    values = [1 + 2j, -3 + 0.5j, 0j]
    got = kael.tensor(values) / kael.zeros(3, dtype=kael.complex64)
    want = torch.tensor(values) / torch.zeros(3, dtype=torch.complex64)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_division_keeps_huge_and_tiny_operands_finite():
    big = [complex(3e38, 2e38), complex(1e-38, 3e-39)]
    got = kael.tensor(big) / kael.tensor([complex(2e38, 1e38), complex(2e-39, 1e-38)])
    want = torch.tensor(big) / torch.tensor([complex(2e38, 1e38), complex(2e-39, 1e-38)])
    close(got, want, rtol=1e-6, atol=0)


def test_operators_in_place_and_alpha():
    k, t = pair((2, 3))
    k2, t2 = pair((2, 3), seed=4)
    close(k * 2 + k2 / (1 - 1j) - 3j, t * 2 + t2 / (1 - 1j) - 3j)
    close(kael.add(k, k2, alpha=2), torch.add(t, t2, alpha=2))
    close(kael.sub(k, k2, alpha=0.5 + 1j), torch.sub(t, t2, alpha=0.5 + 1j))
    k += k2
    t += t2
    k *= 1j
    t *= 1j
    close(k, t)


def test_in_place_refuses_a_complex_result_into_a_real_tensor():
    with pytest.raises(kael.TypeError, match="result type complex64 can't be cast"):
        kael.ones(2).add_(1j)


EDGES = [0j, 1 + 0j, -4 + 0j, complex(-4, -0.0), 1j, -1j, 3 - 4j, -0.5 + 0.25j, 1e-20 + 1e-20j]


@pytest.mark.parametrize(
    "op", ["neg", "exp", "log", "sqrt", "reciprocal", "square", "sgn", "conj_physical"]
)
@pytest.mark.parametrize("dtype", COMPLEX)
def test_unary_math_matches_torch(op, dtype):
    values = np.array(EDGES[1:] if op in ("log", "reciprocal") else EDGES, dtype=dtype)
    got = getattr(kael, op)(kael.tensor(values))
    want = getattr(torch, op)(torch.tensor(values))
    close(got, want, rtol=4e-6 if dtype == "complex64" else 1e-14, atol=0)


@pytest.mark.parametrize("op", ["abs", "angle", "isnan", "isinf", "isfinite"])
@pytest.mark.parametrize("dtype", COMPLEX)
def test_real_and_bool_results_match_torch(op, dtype):
    values = np.array([*EDGES, complex(math.inf, 1), complex(1, math.nan)], dtype=dtype)
    got = getattr(kael, op)(kael.tensor(values))
    want = getattr(torch, op)(torch.tensor(values))
    assert str(got.dtype) == str(want.dtype)[6:]
    np.testing.assert_allclose(
        got.numpy(), want.numpy(), rtol=2e-7 if dtype == "complex64" else 1e-15
    )


def test_sign_refuses_complex_as_torch():
    with pytest.raises(kael.TypeError, match="Please use torch.sgn instead"):
        kael.sign(kael.ones(2, dtype=kael.complex64))


# ---- reductions and products ----------------------------------------------------------------------


@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("dim, keepdim", [(None, False), (0, False), (-1, True), ((0, 2), False)])
def test_sum_and_mean_match_torch(op, dim, keepdim):
    k, t = pair((3, 4, 5), "complex128")
    args = () if dim is None else (dim, keepdim)
    close(getattr(k, op)(*args), getattr(t, op)(*args))


def test_sum_of_0d_and_empty_complex_tensors():
    close(kael.tensor(1 + 2j).sum(), torch.tensor(1 + 2j).sum())
    close(kael.tensor(1 + 2j).mean(), torch.tensor(1 + 2j).mean())
    close(kael.ones(0, dtype=kael.complex64).sum(), torch.ones(0, dtype=torch.complex64).sum())


@pytest.mark.parametrize(
    "left, right", [((3, 4), (4, 2)), ((2, 3, 4), (4, 5)), ((4,), (4, 3)), ((3, 4), (4,))]
)
def test_matmul_matches_torch(left, right):
    (ka, ta), (kb, tb) = pair(left, seed=1), pair(right, seed=2)
    close(ka @ kb, ta @ tb, rtol=1e-5, atol=1e-5)
    real = np.random.default_rng(3).standard_normal(right).astype(np.float32)
    close(ka @ kael.tensor(real), ta @ torch.tensor(real).to(torch.complex64), rtol=1e-5, atol=1e-5)


# ---- printing and refusals ------------------------------------------------------------------------


def test_printing_shows_both_parts():
    text = repr(kael.tensor([[1 + 2j, -0.5 - 1j]]))
    assert "[[ 1.0000+2.0000j, -0.5000-1.0000j]]" in text and "dtype=complex64" in text


@pytest.mark.parametrize(
    "call",
    [
        lambda z: kael.floor(z),
        lambda z: kael.maximum(z, z),
        lambda z: z.max(),
        lambda z: kael.sort(z),
        lambda z: z.argmax(),
        lambda z: kael.atan2(z, z),
        lambda z: kael.nn.functional.relu(z),
        lambda z: z < z,
    ],
)
def test_ops_without_a_complex_form_refuse_with_a_typed_error(call):
    with pytest.raises(kael.Error):
        call(kael.ones(3, dtype=kael.complex64))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_randn_draws_unit_variance_complex_normals_and_rand_unit_squares(dtype):
    kael.manual_seed(3)
    z = kael.randn(40_000, dtype=getattr(kael, dtype))
    assert z.dtype is getattr(kael, dtype)
    for part in (z.real, z.imag):  # each N(0, 1/2), as torch's complex normal
        assert abs(float(part.mean())) < 6 * (0.5 / 40_000) ** 0.5
        assert abs(float(part.var()) - 0.5) < 6 * (2 * 0.25 / 40_000) ** 0.5
    u = kael.rand(1000, dtype=getattr(kael, dtype))
    for part in (u.real, u.imag):
        assert float(part.min()) >= 0.0 and float(part.max()) < 1.0
    assert kael.randn_like(z[:3]).dtype is z.dtype


def test_advanced_indexing_reads_and_writes_both_parts():
    k, t = pair((4, 3))
    mask = np.array([True, False, True, True])
    close(k[kael.tensor(mask)], t[torch.tensor(mask)])
    close(k[..., kael.tensor([2, 0])], t[..., torch.tensor([2, 0])])
    k[kael.tensor([0, 2])] = 1 - 1j
    t[torch.tensor([0, 2])] = 1 - 1j
    k[1] = kael.ones(3)
    t[1] = torch.ones(3)
    close(k, t)


# ---- the complex sweep's fixes --------------------------------------------------------------------


def both(call, dtype="complex64"):
    """call(library, x, y, m) on kael and torch: x [2, 3] and y [3, 2] complex, m [2, 2]."""
    out = []
    for lib, seed in ((kael, 0), (torch, 0)):
        x = pair((2, 3), dtype, seed=seed)[lib is torch]
        y = pair((3, 2), dtype, seed=seed + 1)[lib is torch]
        m = pair((2, 2), dtype, seed=seed + 2)[lib is torch]
        out.append(call(lib, x, y, m))
    return out


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize(
    "call",
    [
        lambda L, x, y, m: L.addmm(m, x, y, alpha=0.5, beta=1.5),
        lambda L, x, y, m: L.addmm(m, x, y, alpha=0.5j, beta=0.25 - 1j),
        lambda L, x, y, m: L.addmv(m[0], x, y[:, 0], beta=0.5),
        lambda L, x, y, m: L.baddbmm(m[None], x[None], y[None], alpha=0.5, beta=0.5),
        lambda L, x, y, m: L.addbmm(m, x[None], y[None], alpha=-1.5, beta=0.5),
        lambda L, x, y, m: L.addr(m, m[0], m[1], alpha=0.5, beta=1.5),
        lambda L, x, y, m: L.addcmul(x, x, x, value=0.5),
        lambda L, x, y, m: L.addcdiv(x, x, y.mT, value=-0.5),
        lambda L, x, y, m: x.clone().add_(y.mT, alpha=0.5),
        lambda L, x, y, m: x.clone().sub_(y.mT, alpha=2.5j),
        lambda L, x, y, m: m.clone().addmm_(x, y, alpha=0.5),
    ],
)
def test_fractional_and_complex_scalars_of_the_blas_family_match_torch(call, dtype):
    got, want = both(call, dtype)
    close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "call",
    [
        lambda: kael.softmax(kael.ones(2, dtype=kael.complex128), 0),
        lambda: kael.log_softmax(kael.ones(2, dtype=kael.complex64), 0),
        lambda: kael.special.softmax(kael.ones(2, dtype=kael.complex64), 0),
        lambda: kael.nn.functional.layer_norm(kael.ones(1, 2, dtype=kael.complex64), (2,)),
        lambda: kael.nn.LayerNorm(2)(kael.ones(1, 2, dtype=kael.complex64)),
        lambda: kael.nn.functional.cross_entropy(
            kael.ones(1, 2, dtype=kael.complex64), kael.tensor([0])
        ),
        lambda: kael.mvlgamma(kael.ones(2, dtype=kael.complex64), 1),
        lambda: kael.special.multigammaln(kael.ones(2, dtype=kael.complex64), 1),
        lambda: kael.ones(2, dtype=kael.complex64).mvlgamma_(1),
    ],
)
def test_softmax_layer_norm_and_mvlgamma_refuse_complex_as_torch(call):
    with pytest.raises(kael.TypeError, match="does not support complex"):
        call()


def test_softmax_with_a_real_dtype_converts_a_complex_input_as_torch():
    k, t = pair((3,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        close(kael.softmax(k, 0, dtype=kael.float32), torch.softmax(t, 0, dtype=torch.float32))


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("dim, keepdim", [(0, False), (1, True), ((0, 1), False)])
def test_logsumexp_of_complex_matches_torch(dtype, dim, keepdim):
    k, t = pair((3, 4), dtype)
    close(kael.logsumexp(k, dim, keepdim), torch.logsumexp(t, dim, keepdim), rtol=1e-5)
    close(k.logsumexp(dim, keepdim), t.logsumexp(dim, keepdim), rtol=1e-5)


@pytest.mark.parametrize(
    "values, shape",
    [([float("-inf") + 1j, float("-inf") + 0j], (2,)), ([1e30 + 1j, 1 + 0j], (2,)), ([], (0, 2))],
)
def test_logsumexp_of_complex_infinities_and_empty_rows_matches_torch(values, shape):
    k = kael.tensor(values, dtype=kael.complex64).reshape(shape)
    t = torch.tensor(values, dtype=torch.complex64).reshape(shape)
    close(kael.special.logsumexp(k, 0), torch.special.logsumexp(t, 0))


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), ()])
def test_conjugate_transposes_conjugate_complex_tensors(shape):
    k, t = pair(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a 0-d tensor's deprecation warning
        close(k.mH, t.mH.resolve_conj())
        close(k.adjoint(), t.adjoint().resolve_conj())
        close(kael.adjoint(k), torch.adjoint(t).resolve_conj())
        if len(shape) in (0, 2):
            close(k.H, t.H.resolve_conj())
    real = kael.ones(2, 3)
    assert real.mH.shares_storage(real)  # a real tensor's is still a view


def test_vdot_and_vecdot_conjugate_the_first_argument():
    (ka, ta), (kb, tb) = pair((4,), seed=1), pair((2, 4), seed=2)
    close(kael.vdot(ka, kb[0]), torch.vdot(ta, tb[0]), rtol=1e-5)
    close(kael.linalg.vecdot(ka, kb), torch.linalg.vecdot(ta, tb), rtol=1e-5)
    close(kael.linalg.vecdot(kb, ka, dim=-1), torch.linalg.vecdot(tb, ta, dim=-1), rtol=1e-5)


@pytest.mark.parametrize("weighted", [False, True])
def test_cov_of_complex_conjugates_as_torch(weighted):
    k, t = pair((2, 5), "complex128")
    kw = {"fweights": [1, 2, 1, 3, 1], "aweights": [0.5, 1.0, 2.0, 1.0, 0.25]} if weighted else {}
    close(
        kael.cov(k, **{n: kael.tensor(v) for n, v in kw.items()}),
        torch.cov(t, **{n: torch.tensor(v) for n, v in kw.items()}),
    )
    close(kael.cov(k[0]), torch.cov(t[0]))


@pytest.mark.parametrize(
    "source, target", [p for p in itertools.product(ALL, ALL) if "complex" in p[0] + p[1]]
)
def test_can_cast_matches_torch_for_complex_dtypes(source, target):
    want = torch.can_cast(getattr(torch, source), getattr(torch, target))
    assert kael.can_cast(getattr(kael, source), getattr(kael, target)) is want


@pytest.mark.parametrize(
    "call",
    [
        lambda L: L.linspace(0, 1 + 1j, 5),
        lambda L: L.linspace(1j, 1, 4, dtype=L.complex128),
        lambda L: L.linspace(-1, 2, 7, dtype=L.complex64),
        lambda L: L.linspace(1j, 2j, 1),
        lambda L: L.logspace(0, 1, 3, dtype=L.complex64),
        lambda L: L.logspace(-1, 2, 5, base=2.0, dtype=L.complex128),
        lambda L: L.logspace(0, 1 + 1j, 4),
    ],
)
def test_linspace_and_logspace_build_complex_ranges_as_torch(call):
    close(call(kael), call(torch), rtol=1e-5, atol=1e-6)


def test_linspace_refuses_complex_ends_with_a_real_dtype_and_logspace_a_negative_base():
    with pytest.raises(kael.TypeError, match="can't be safely cast to passed dtype float32"):
        kael.linspace(0, 1 + 1j, 3, dtype=kael.float32)
    with pytest.raises(kael.ValueError, match="positive base"):
        kael.logspace(0, 1 + 1j, 3, base=-2.0)


@pytest.mark.parametrize("value", [1 + 2j, 2.5, -3, True])
def test_complex_of_a_one_element_tensor_matches_torch(value):
    dtype = "complex128" if isinstance(value, complex) else None
    k = kael.tensor([value], dtype=dtype and getattr(kael, dtype))
    t = torch.tensor([value], dtype=dtype and getattr(torch, dtype))
    assert complex(k) == complex(t)


def test_float_and_int_of_a_complex_tensor_take_a_zero_imaginary_part_only():
    assert float(kael.tensor([1.5 + 0j])) == float(torch.tensor([1.5 + 0j])) == 1.5
    assert int(kael.tensor([2.5 + 0j])) == int(torch.tensor([2.5 + 0j])) == 2
    with pytest.raises(kael.TypeError, match="cannot be converted to type double"):
        float(kael.tensor([1 + 2j]))
    with pytest.raises(kael.TypeError, match="cannot be converted to type int64"):
        int(kael.tensor([1 + 2j]))
    with pytest.raises(kael.TypeError, match="only integer tensors"):
        [1, 2][kael.tensor(1 + 0j)]


def test_a_complex_fill_of_a_real_tensor_takes_a_zero_imaginary_part_only():
    mask = [True, False]
    close(
        kael.ones(2).masked_fill(kael.tensor(mask), 3 + 0j),
        torch.ones(2).masked_fill(torch.tensor(mask), 3 + 0j),
    )
    with pytest.raises(kael.TypeError, match="value 1j cannot be converted to type float32"):
        kael.ones(2).masked_fill(kael.tensor(mask), 1j)
    with pytest.raises(kael.TypeError, match="value 1j cannot be converted to type float32"):
        kael.ones(2).index_fill_(0, kael.tensor([0]), 1j)


@pytest.mark.parametrize("var", [1 + 2j, "tensor"])
def test_gaussian_nll_loss_refuses_a_complex_var(var):
    var = kael.ones(2, dtype=kael.complex64) if var == "tensor" else var
    with pytest.raises(kael.TypeError, match="var must be real"):
        kael.nn.functional.gaussian_nll_loss(kael.ones(2), kael.ones(2), var)


@pytest.mark.parametrize(
    "call",
    [
        lambda L: L.tensor([1 + 2j], dtype=L.float32),
        lambda L: L.tensor([[1, 2j]], dtype=L.int64),
        lambda L: L.ones(2).new_tensor(1 + 0j),
    ],
)
def test_tensor_refuses_complex_data_for_a_real_dtype_as_torch(call):
    with pytest.raises(TypeError, match="must be real number|cannot be interpreted"):
        call(torch)
    with pytest.raises(kael.TypeError, match="must be real number, not complex"):
        call(kael)


def test_tensor_stores_complex_data_as_bool_as_torch():
    assert kael.tensor([2j, 0j], dtype=kael.bool).tolist() == [True, False]
    assert torch.tensor([2j, 0j], dtype=torch.bool).tolist() == [True, False]


@pytest.mark.parametrize("value", ["real", "complex128"])
def test_index_put_into_a_complex_tensor_needs_its_dtype_as_torch(value):
    src = kael.tensor([5.0]) if value == "real" else kael.tensor([5 + 1j], dtype=kael.complex128)
    c = kael.zeros(2, dtype=kael.complex64)
    with pytest.raises(kael.TypeError, match="index put requires the value's dtype"):
        c[kael.tensor([0])] = src
    k, t = pair((3,))
    k[kael.tensor([0, 2])] = 5.0
    t[torch.tensor([0, 2])] = 5.0
    k[kael.tensor([True, False, False])] = kael.tensor(2.0)  # one element through a mask
    t[torch.tensor([True, False, False])] = torch.tensor(2.0)
    close(k, t)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: kael.randperm(3, dtype=kael.complex64), "randperm does not support"),
        (lambda: kael.randint(0, 3, (2,), dtype=kael.complex64), "random bounds"),
        (lambda: kael.randint_like(kael.zeros(2, dtype=kael.complex64), 5), "random bounds"),
        (lambda: kael.nansum(kael.ones(2, dtype=kael.complex64)), "nansum does not support"),
    ],
)
def test_random_integers_and_nansum_refuse_complex_as_torch(call, match):
    with pytest.raises(kael.TypeError, match=match):
        call()


def test_where_of_complex_operands_and_numbers_matches_torch():
    (k, t), (k2, t2) = pair((2, 3)), pair((2, 3), seed=1)
    km, tm = kael.tensor([[True, False, True]]), torch.tensor([[True, False, True]])
    close(kael.where(km, k, k2), torch.where(tm, t, t2))
    close(kael.where(km, k, 0.5), torch.where(tm, t, 0.5))
    close(kael.where(km, 2 - 1j, k2), torch.where(tm, 2 - 1j, t2))
    close(kael.where(km, kael.ones(2, 3), 1j), torch.where(tm, torch.ones(2, 3), 1j))
    close(k.where(km, k2.to(kael.complex128)), t.where(tm, t2.to(torch.complex128)))


@pytest.mark.parametrize(
    "call",
    [
        lambda L, x, i, m: x.masked_fill(m, 0.5),
        lambda L, x, i, m: L.masked_fill(x, m, 1 - 2j),
        lambda L, x, i, m: x.masked_fill(m[0], L.tensor(3j)),
        lambda L, x, i, m: x.clone().masked_fill_(m, 2),
        lambda L, x, i, m: L.index_fill(x, 1, i, 0.5),
        lambda L, x, i, m: x.clone().index_fill_(0, i[1:], 1 + 1j),
        lambda L, x, i, m: L.scatter(x, 1, i.expand(2, 2), 2j),
        lambda L, x, i, m: x.clone().scatter_(0, i[None, 1:], value=-1.5),
        lambda L, x, i, m: L.scatter(x, 1, i.expand(2, 2), x.flip(1)),
    ],
)
def test_fills_and_scatters_of_complex_tensors_match_torch(call):
    out = []
    for lib in (kael, torch):
        x = pair((2, 3), seed=4)[lib is torch]
        i, m = lib.tensor([2, 0]), lib.tensor([[True, False, True], [False, False, True]])
        out.append(call(lib, x, i, m))
    close(*out)


def test_scatter_of_complex_refuses_another_src_dtype_and_a_multiplying_reduce():
    """reduce='add' adds part by part (tests/frontend/test_scatters.py); a complex product is
    not partwise."""
    c, idx = kael.zeros(2, 2, dtype=kael.complex64), kael.tensor([[0, 1]])
    with pytest.raises(kael.TypeError, match="Expected self.dtype to be equal to src.dtype"):
        c.scatter(0, idx, kael.ones(1, 2))
    with pytest.raises(kael.TypeError, match="does not support complex64"):
        c.scatter(0, idx, kael.ones(1, 2, dtype=kael.complex64), reduce="multiply")


def test_ops_without_a_complex_scalar_name_complex_tensors_not_a_dtype():
    with pytest.raises(kael.TypeError, match="does not support complex64 tensors"):
        kael.clamp(kael.ones(2, dtype=kael.complex64), 0, 1)


@pytest.mark.parametrize(
    "name", ["exp_", "log_", "sqrt_", "neg_", "reciprocal_", "square_", "sgn_"]
)
def test_inplace_forms_of_complex_ops_match_torch(name):
    k, t = pair((2, 3), "complex128")
    got = getattr(k, name)()
    getattr(t, name)()
    assert got is k
    close(k, t)


def test_inplace_abs_of_complex_refuses_as_torch():
    with pytest.raises(kael.TypeError, match="In-place abs is not supported for complex"):
        kael.ones(2, dtype=kael.complex64).abs_()


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize(
    "call",
    [
        lambda L, x: L.index_select(x, 1, L.tensor([2, 0])),
        lambda L, x: x.index_select(0, L.tensor([1])),
        lambda L, x: L.gather(x, 1, L.tensor([[2, 0], [1, 1]])),
        lambda L, x: L.take(x, L.tensor([5, 0, -1])),
        lambda L, x: L.take_along_dim(x, L.tensor([[1], [0]]), 1),
    ],
)
def test_index_reads_of_complex_tensors_match_torch(call, dtype):
    k, t = pair((2, 3), dtype)
    close(call(kael, k), call(torch, t))


@pytest.mark.parametrize(
    "call",
    [
        lambda: kael.tril_indices(3, 3, dtype=kael.complex64),
        lambda: kael.triu_indices(3, 3, dtype=kael.complex128),
        lambda: kael.unique_consecutive(kael.ones(3, dtype=kael.complex64)),
    ],
)
def test_index_makers_and_unique_consecutive_refuse_complex_as_torch(call):
    with pytest.raises(kael.TypeError, match="does not support complex"):
        call()


MATH_EDGES = [
    0j,
    1 + 0j,
    -4 + 0j,
    1j,
    -1j,
    3 - 4j,
    -0.5 + 0.25j,
    1e-5 + 1e-5j,
    30 + 2j,
    -30 - 1j,
    2 + 30j,
]


@pytest.mark.parametrize(
    "op",
    [
        "sin",
        "cos",
        "tan",
        "sinh",
        "cosh",
        "tanh",
        "sigmoid",
        "rsqrt",
        "log2",
        "log10",
        "expm1",
        "log1p",
        "exp2",
    ],
)
@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_math_matches_torch(op, dtype):
    values = np.array(
        MATH_EDGES[1:] if op in ("rsqrt", "log2", "log10") else MATH_EDGES, dtype=dtype
    )
    got = getattr(kael, op)(kael.tensor(values))
    want = getattr(torch, op)(torch.tensor(values))
    assert got.dtype is getattr(kael, dtype)
    tol = 8e-7 if dtype == "complex64" else 2e-15
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=0)


@pytest.mark.parametrize("exponent", [2, 0.5, 0, -1, 3, -2.5, 1 + 1j, 1j])
def test_pow_of_complex_matches_torch_and_zero_bases_are_torchs(exponent):
    values = np.array(MATH_EDGES, dtype="complex128")
    got, want = kael.tensor(values) ** exponent, torch.tensor(values) ** exponent
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-14, atol=0)


def test_pow_with_complex_exponents_and_bases_on_both_sides():
    k, t = pair((2, 3), "complex128")
    close(k**k, t**t)
    close(2**k, 2**t)
    close(kael.pow(kael.ones(3), 1j), torch.pow(torch.ones(3), 1j))


@pytest.mark.parametrize("args", [(), (0,), (1, True), ((0, 1),)])
@pytest.mark.parametrize("op", ["var", "std"])
def test_var_and_std_of_complex_are_real_as_torch(op, args):
    k, t = pair((3, 4), "complex128")
    close(getattr(k, op)(*args), getattr(t, op)(*args))


def test_cumsum_norms_and_counts_of_complex_match_torch():
    k, t = pair((3, 4))
    close(kael.cumsum(k, 1), torch.cumsum(t, 1))
    close(kael.cumsum(k, -2, dtype=kael.complex128), torch.cumsum(t, -2, dtype=torch.complex128))
    close(kael.linalg.vector_norm(k), torch.linalg.vector_norm(t))
    close(kael.linalg.vector_norm(k, 1, 0), torch.linalg.vector_norm(t, 1, 0))
    close(k.norm(), t.norm())
    k[0, 1], t[0, 1] = 0, 0
    assert kael.count_nonzero(k).item() == torch.count_nonzero(t).item() == 11
    np.testing.assert_array_equal(kael.nonzero(k).numpy(), torch.nonzero(t).numpy())


def test_isclose_allclose_and_equal_of_complex_follow_torch():
    values = [1 + 1j, complex(math.inf, 0), complex(math.nan, 1), 2j]
    other = [1 + 1.000001j, complex(math.inf, 0), complex(math.nan, 1), 2.1j]
    for equal_nan in (False, True):
        got = kael.isclose(kael.tensor(values), kael.tensor(other), equal_nan=equal_nan)
        want = torch.isclose(torch.tensor(values), torch.tensor(other), equal_nan=equal_nan)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    k, _ = pair((3,))
    assert kael.allclose(k, k) and kael.equal(k, k.clone()) and not kael.equal(k, k + 1j)


@pytest.mark.parametrize("args", [(), (0,), (1, True), (-1,)])
def test_prod_of_complex_matches_torch(args):
    k, t = pair((3, 5, 4), "complex128")
    close(k.prod(*args), t.prod(*args))


def test_prod_and_cumprod_edges_match_torch():
    close(kael.ones(0, dtype=kael.complex64).prod(), torch.ones(0, dtype=torch.complex64).prod())
    close(kael.tensor(1 + 2j).prod(), torch.tensor(1 + 2j).prod())
    close(kael.tensor([1j] * 7).prod(), torch.tensor([1j] * 7).prod())
    close(kael.cumprod(kael.tensor(1 + 2j), 0), torch.cumprod(torch.tensor(1 + 2j), 0))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumprod_of_complex_matches_torch(dim):
    k, t = pair((3, 9), "complex128")
    close(kael.cumprod(k, dim), torch.cumprod(t, dim))


def test_complex_ops_trace_into_a_compiled_plan():
    @kael.compile
    def power(z, w):
        return (z * w + 1j).abs().sum(), kael.view_as_real(z.exp())

    k, t = pair((8,))
    k2, t2 = pair((8,), seed=3)
    for _ in range(2):  # the trace, then the replayed plan
        total, pairs = power(k, k2)
        close(total, (t * t2 + 1j).abs().sum())
        close(pairs, torch.view_as_real(t.exp()))


@pytest.mark.parametrize(
    "name, kwargs",
    [("sum", {}), ("mean", {}), ("prod", {}), ("cumsum", {"dim": 1}), ("cumprod", {"dim": 0})],
)
def test_a_complex_dtype_makes_reductions_of_real_tensors_complex_as_torch(name, kwargs):
    values = RNG.standard_normal((3, 4)).astype(np.float32)
    got = getattr(kael, name)(kael.tensor(values), dtype=kael.complex64, **kwargs)
    want = getattr(torch, name)(torch.tensor(values), dtype=torch.complex64, **kwargs)
    close(got, want, rtol=1e-5, atol=1e-6)
    z, t = pair((3, 4))
    close(kael.cumsum(z, 1, dtype=kael.complex128), torch.cumsum(t, 1, dtype=torch.complex128))


# ---- out= of the complex elementwise ops -----------------------------------------------------


_Z = [1 + 2j, 3 - 1j]


@pytest.mark.parametrize(
    "call",
    [
        lambda m, z, o: m.mul(z, z, out=o),
        lambda m, z, o: m.exp(z, out=o),
        lambda m, z, o: m.add(z, z, alpha=2, out=o),
        lambda m, z, o: m.sub(z, 1.5, out=o),
        lambda m, z, o: m.complex(m.real(z), m.imag(z), out=o),
        lambda m, z, o: m.polar(m.real(z), m.imag(z), out=o),
        lambda m, z, o: m.sinh(z, out=o),
        lambda m, z, o: m.sgn(z, out=o),
    ],
)
@pytest.mark.parametrize("out_dtype", ["float32", "int64", "bool"])
def test_complex_result_into_a_real_out_is_refused_as_torch(call, out_dtype):
    z, tz = kael.tensor(_Z), torch.tensor(_Z)
    with pytest.raises(RuntimeError):  # complex, polar and sgn word it otherwise
        call(torch, tz, torch.zeros(2, dtype=getattr(torch, out_dtype)))
    out = kael.zeros(2, dtype=getattr(kael, out_dtype))
    with pytest.raises(kael.TypeError, match="can't be cast to the desired output type"):
        call(kael, z, out)
    assert not out.numpy().any()  # nothing written


def test_a_large_complex_product_into_a_float_out_raises_instead_of_crashing():
    z = kael.ones(1_000_000, dtype=kael.complex128)
    with pytest.raises(kael.TypeError, match="complex128 can't be cast to the desired output"):
        kael.mul(z, z, out=kael.zeros(1_000_000))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, z, o: m.mul(z, z, out=o),
        lambda m, z, o: m.exp(z, out=o),
        lambda m, z, o: m.add(z, z, alpha=2, out=o),
        lambda m, z, o: m.complex(m.real(z), m.imag(z), out=o),
        lambda m, z, o: m.pow(z, 2, out=o),
    ],
)
@pytest.mark.parametrize("size", [0, 6, 50])
def test_a_wrong_shaped_complex_out_is_resized_as_torch(call, size):
    z, tz = kael.tensor(_Z), torch.tensor(_Z)
    out, tout = kael.zeros(size, dtype=kael.complex64), torch.zeros(size, dtype=torch.complex64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call(torch, tz, tout)
        assert call(kael, z, out) is out
    assert len(caught) == (2 if size else 0)  # torch's resize warning, once each
    close(out, tout)


def test_an_expanded_complex_out_is_refused_before_any_write():
    z = kael.tensor(_Z)
    out = kael.zeros(1, dtype=kael.complex64).expand(2)
    with pytest.raises(kael.Error, match="more than one element of the written-to tensor"):
        kael.exp(z, out=out)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        torch.exp(torch.tensor(_Z), out=torch.zeros(1, dtype=torch.complex64).expand(2))


def test_a_complex_out_of_the_other_width_casts_or_is_refused_as_torch():
    # mul casts its complex64 product into a complex128 out, as torch; neg refuses one
    z, tz = kael.tensor(_Z), torch.tensor(_Z)
    out = kael.zeros(2, dtype=kael.complex128)
    assert kael.mul(z, z, out=out) is out
    close(out, torch.mul(tz, tz).to(torch.complex128))
    with pytest.raises(kael.TypeError, match="out has dtype complex128 but the result has"):
        kael.neg(z, out=kael.zeros(2, dtype=kael.complex128))


@pytest.mark.parametrize("op", ["abs", "isnan", "isfinite"])
def test_real_results_of_complex_ops_check_their_out(op):
    z, tz = kael.tensor(_Z), torch.tensor(_Z)
    want = getattr(torch, op)(tz)
    out = kael.zeros(2, dtype=getattr(kael, str(want.dtype)[6:]))
    assert getattr(kael, op)(z, out=out) is out
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6)
    with pytest.raises(kael.TypeError):  # abs casts into complex64 only as torch's does
        getattr(kael, op)(z, out=kael.zeros(2, dtype=kael.complex128))


def test_complex_out_that_is_its_input_matches_torch():
    z, tz = kael.tensor(_Z), torch.tensor(_Z)
    assert kael.mul(z, z, out=z) is z
    torch.mul(tz, tz, out=tz)
    close(z, tz)


# ---- special values, against glibc's C99 functions as torch calls them -------------------------

_PARTS = [0.0, -0.0, 1.5, -2.0, 1e-320, 30.0, 88.5, 100.0, 711.0, 800.0, 1500.0, 3000.0]
_PARTS += [-711.0, -800.0, -100.0, math.inf, -math.inf, math.nan]
_SPECIAL = [complex(a, b) for a in _PARTS for b in _PARTS]
# sqrt's |z| of a subnormal part keeps ~5 digits (a documented limit), so no 1e-320 there
_NORMAL = [v for v in _SPECIAL if 1e-320 not in (v.real, v.imag)]


def _same_parts(got: np.ndarray, want: np.ndarray, rtol: float):
    """Equal parts: NaN to NaN, zeros with their sign, infinities exactly, else within rtol."""
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        nan = np.isnan(w)
        assert (np.isnan(g) == nan).all()
        zero = w == 0
        assert (g[zero] == 0).all() and (np.signbit(g[zero]) == np.signbit(w[zero])).all()
        np.testing.assert_allclose(g[~nan & ~zero], w[~nan & ~zero], rtol=rtol, atol=1e-300)


@pytest.mark.parametrize(
    "op", ["exp", "exp2", "sin", "cos", "sinh", "cosh", "tanh", "tan", "sigmoid", "sqrt"]
)
@pytest.mark.parametrize("dtype", COMPLEX)
def test_infinite_nan_and_overflowing_parts_match_torch(op, dtype):
    values = _NORMAL if op == "sqrt" else _SPECIAL
    got = getattr(kael, op)(kael.tensor(values, dtype=getattr(kael, dtype)))
    want = getattr(torch, op)(torch.tensor(values, dtype=getattr(torch, dtype)))
    _same_parts(got.numpy(), want.numpy(), 1e-5)


@pytest.mark.parametrize(
    "op, value, expected",
    [
        ("exp", 800 + 0j, complex(math.inf, 0)),
        ("exp", 711 + 1.5j, complex(4.295618040799207e307, math.inf)),
        ("sin", 1000j, complex(0, math.inf)),
        ("cos", 1000j, complex(math.inf, -0.0)),
        ("sigmoid", -800 + 0j, 0j),
        ("sinh", 711 + 0j, complex(math.inf, 0)),
        ("cosh", 711 + 0j, complex(math.inf, 0)),
        ("sqrt", complex(1, math.inf), complex(math.inf, math.inf)),
        ("rsqrt", complex(math.inf, 0), 0j),
        ("reciprocal", complex(0, math.inf), complex(0, -0.0)),
        ("tanh", complex(0, math.nan), complex(0, math.nan)),
        ("tanh", complex(math.nan, 0), complex(math.nan, 0)),
        ("tanh", complex(math.nan, 1), complex(math.nan, math.nan)),
        ("tan", complex(0, math.inf), 1j),
    ],
)
def test_review_cases_of_overflow_and_infinities_match_torch(op, value, expected):
    got = getattr(kael, op)(kael.tensor([value], dtype=kael.complex128)).numpy()
    want = getattr(torch, op)(torch.tensor([value], dtype=torch.complex128)).numpy()
    _same_parts(got, want, 1e-12)
    _same_parts(got, np.array([expected]), 1e-5)


@pytest.mark.parametrize("op", ["exp", "sin", "sigmoid", "exp2"])
def test_complex64_overflow_at_small_arguments_matches_torch(op):
    values = [89 + 1.5j, 100 + 0j, 100j, -100 + 0j, 400 + 0j]
    got = getattr(kael, op)(kael.tensor(values, dtype=kael.complex64))
    want = getattr(torch, op)(torch.tensor(values, dtype=torch.complex64))
    _same_parts(got.numpy(), want.numpy(), 1e-5)


@pytest.mark.parametrize("op", ["rsqrt", "reciprocal"])
@pytest.mark.parametrize("dtype", COMPLEX)
def test_inverses_of_infinite_and_zero_parts_match_torch(op, dtype):
    got = getattr(kael, op)(kael.tensor(_NORMAL, dtype=getattr(kael, dtype)))
    want = getattr(torch, op)(torch.tensor(_NORMAL, dtype=getattr(torch, dtype)))
    _same_parts(got.numpy(), want.numpy(), 1e-5)


# ---- pow ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda m: (-2) ** m.tensor([2 + 3j, 0.5 - 1j], dtype=m.complex128),
        lambda m: m.tensor([-8.0, -2.0], dtype=m.float64) ** (0.5 + 0j),
        lambda m: m.tensor([-8.0], dtype=m.float64) ** m.tensor([1 / 3 + 0j], dtype=m.complex128),
        lambda m: (
            m.tensor([-8.0, 3.0], dtype=m.float64) ** m.tensor([1 / 3 + 1j], dtype=m.complex64)
        ),
        lambda m: m.tensor([-8.0, 4.0]) ** (1.5 + 0.5j),
    ],
)
def test_a_negative_real_base_takes_the_principal_branch_as_torch(call):
    close(call(kael), call(torch))


_BASES = [-8 + 0j, 2 + 3j, -0.5 - 1.25j, complex(math.inf, 0), complex(math.nan, 1), 0j]


@pytest.mark.parametrize("exponent", [0, 1, 2, 3, -1, -2, 0.5, -0.5, 2 + 0j, True - 1])
@pytest.mark.parametrize("dtype", COMPLEX)
def test_number_exponents_take_torchs_exact_paths(exponent, dtype):
    got = kael.tensor(_BASES, dtype=getattr(kael, dtype)) ** exponent
    want = torch.tensor(_BASES, dtype=getattr(torch, dtype)) ** exponent
    assert got.dtype == getattr(kael, dtype)
    _same_parts(got.numpy(), want.numpy(), 1e-6)


def test_integer_powers_of_real_valued_complex_numbers_are_exact():
    got = kael.view_as_real(kael.tensor([-8 + 0j, 2 + 3j]) ** 2).numpy()
    np.testing.assert_array_equal(got, [[64, -0.0], [-5, 12]])
    assert np.signbit(got[0, 1])  # torch's -0: (-8)(0) + (0)(-8)
    got = (kael.tensor([-8 + 0j], dtype=kael.complex128) ** 1).numpy()
    np.testing.assert_array_equal(got, [-8 + 0j])


@pytest.mark.parametrize("exponent", [0, 1, 2, -1, 0.5, 2 + 0j])
def test_a_real_base_with_a_complex_number_exponent_matches_torch(exponent):
    base = [-2.0, 3.0, 0.0]
    got = kael.tensor(base) ** complex(exponent)
    want = torch.tensor(base) ** complex(exponent)
    _same_parts(got.numpy(), want.numpy(), 1e-6)


def test_pow_out_and_in_place_with_an_exact_exponent_match_torch():
    z, tz = pair(4)
    out, tout = kael.empty(4, dtype=kael.complex64), torch.empty(4, dtype=torch.complex64)
    kael.pow(z, 0, out=out)
    torch.pow(tz, 0, out=tout)
    close(out, tout)
    with pytest.raises(kael.TypeError, match="can't be cast"):
        kael.pow(z, 0, out=kael.empty(4))
    close(z.clone().pow_(3), tz.clone().pow_(3), rtol=1e-5)


# ---- prod, isclose, subtraction of bools -------------------------------------------------------


@pytest.mark.parametrize(
    "shape, dim, keepdim", [((0, 3), 1, False), ((0, 3), 1, True), ((2, 0, 3), 2, False)]
)
@pytest.mark.parametrize("dtype", COMPLEX)
def test_prod_over_a_nonempty_dim_of_an_empty_tensor_matches_torch(shape, dim, keepdim, dtype):
    got = kael.prod(kael.zeros(*shape, dtype=getattr(kael, dtype)), dim, keepdim=keepdim)
    close(got, torch.prod(torch.zeros(*shape, dtype=getattr(torch, dtype)), dim, keepdim=keepdim))


def test_prod_over_an_empty_dim_is_one_as_torch():
    got = kael.prod(kael.zeros(3, 0, dtype=kael.complex64), 1)
    close(got, torch.prod(torch.zeros(3, 0, dtype=torch.complex64), 1))


@pytest.mark.parametrize(
    "a, b, rtol",
    [
        (1e308 + 0j, -1e308 + 0j, 10.0),
        (1e308 + 1e308j, -1e308 + 0j, 1e10),
        (1 + 1j, 1 + 1.5j, 1.0),
        (complex(math.inf, 0), complex(math.inf, 0), 0.0),
        (complex(math.inf, 0), 1 + 0j, 1e300),
    ],
)
def test_isclose_requires_a_finite_difference_as_torch(a, b, rtol):
    got = kael.isclose(
        kael.tensor([a], dtype=kael.complex128), kael.tensor([b]).to(kael.complex128), rtol=rtol
    )
    want = torch.isclose(
        torch.tensor([a], dtype=torch.complex128),
        torch.tensor([b], dtype=torch.complex128),
        rtol=rtol,
    )
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.tensor([1 + 1j]) - m.tensor([True]),
        lambda m: m.tensor([1 + 1j]) - True,
        lambda m: True - m.tensor([1 + 1j]),
        lambda m: m.tensor([1 + 1j]).sub_(True),
        lambda m: m.sub(m.tensor([True]), m.tensor([1j]), alpha=2),
    ],
)
def test_complex_minus_bool_is_refused_as_torch(call):
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor"):
        call(torch)
    with pytest.raises(kael.TypeError, match="Subtraction, the `-` operator, with a bool tensor"):
        call(kael)


def test_complex_plus_bool_still_adds_as_torch():
    close(
        kael.tensor([1 + 1j]) + kael.tensor([True]), torch.tensor([1 + 1j]) + torch.tensor([True])
    )


EDGE_VALUES = {
    "complex64": [3e38 + 1j, 2e38 - 2e38j, -3e38 + 5j, -3e38 - 3e38j, 1e38 + 1e38j, 1e-40 + 1e-40j,
                  -1e-44 + 3e-40j, 1e-20 + 1e-21j, 4 + 0j, -4 + 0j, complex(0, -0.0),
                  3e-45 + 4e-45j, 1 + 1e-3j, 0.99 + 0.1j, -0.8 - 0.6j, 1e-5 + 1j, 0.7 + 0.7j],
    "complex128": [1.7e308 + 1j, -1.7e308 - 1e308j, 4e307 + 4e307j, 1e-310 + 0j, 2 + 3j,
                   -1e-320 + 4e-315j, 1e-200 + 1e-201j, 5e-324 + 5e-324j, 1 + 1e-20j,
                   1.0000001 + 1e-4j, 0.999999 + 0.001j, 0.6 + 0.8j],
}  # fmt: skip


@pytest.mark.parametrize("op", ["sqrt", "rsqrt", "log", "log2", "log10"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_sqrt_and_log_of_huge_and_tiny_operands_stay_accurate(op, dtype):
    """Past a quarter of the largest value |a| + |z| (and |z|) would overflow, and below
    the normals the root and the log lose bits: both are scaled first, as glibc's csqrt and
    clog; near the unit circle log |z| is log1p(|z|^2 - 1) / 2 without cancellation."""
    values = EDGE_VALUES[dtype]
    got = getattr(kael, op)(kael.tensor(values, dtype=getattr(kael, dtype)))
    want = getattr(torch, op)(torch.tensor(values, dtype=getattr(torch, dtype)))
    tol = 3e-7 if dtype == "complex64" else 1e-14
    torch.testing.assert_close(
        torch.view_as_real(torch.from_numpy(got.numpy())), torch.view_as_real(want),
        rtol=tol, atol=0, equal_nan=True,
    )  # fmt: skip


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_log1p_where_one_plus_z_overflows_or_nears_the_unit_circle_matches_torch(dtype):
    """|1 + z| past the largest value is scaled as log's (it was inf). (torch's log1p of
    subnormal complex numbers is NaN, so those are left out.)"""
    big = 3e38 if dtype == "complex64" else 1.7e308
    values = [complex(big, big), complex(big, -1.0), -0.5 + 0.866j, -1.5 + 0.9j, 2 + 3j]
    got = kael.log1p(kael.tensor(values, dtype=getattr(kael, dtype)))
    want = torch.log1p(torch.tensor(values, dtype=getattr(torch, dtype)))
    tol = 3e-7 if dtype == "complex64" else 1e-14
    torch.testing.assert_close(torch.from_numpy(got.numpy()), want, rtol=tol, atol=0)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("params", [(), (1.0, 5.0, -5.0)], ids=["defaults", "given"])
def test_nan_to_num_replaces_each_part_as_torch(dtype, params):
    nan, inf = math.nan, math.inf
    values = [complex(nan, inf), complex(1, nan), complex(-inf, 2), complex(3, -inf), 1 + 2j]
    k = kael.tensor(values, dtype=getattr(kael, dtype))
    t = torch.tensor(values, dtype=getattr(torch, dtype))
    want = torch.nan_to_num(t, *params).tolist()
    assert kael.nan_to_num(k, *params).tolist() == want
    assert kael.nan_to_num(k[::2], *params).tolist() == want[::2]
    assert k.nan_to_num_(*params) is k and k.tolist() == want


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=str)
def test_copies_of_any_layout_keep_every_bit(dtype):
    """complex64 copies move each number as one 8-byte word: NaN payloads, signed zeros
    and infinities come through transposed, expanded and sliced copies unchanged."""
    values = np.array([np.nan + 1j, complex(np.inf, -0.0), -0.0 - 4j, 3 - 4j], dtype=dtype)
    bits = values.view(np.uint32 if dtype is np.complex64 else np.uint64)
    bits[0] = 0x7FC00123 if dtype is np.complex64 else 0x7FF8000000000123
    k = kael.tensor(values)
    cases = [
        (k.reshape(2, 2).transpose(0, 1), values.reshape(2, 2).T),
        (k.reshape(4, 1).expand(4, 3), np.broadcast_to(values.reshape(4, 1), (4, 3))),
        (k[1::2], values[1::2]),
    ]
    for view, want in cases:
        got = view.contiguous().numpy()
        np.testing.assert_array_equal(
            got.view(bits.dtype), np.ascontiguousarray(want).view(bits.dtype)
        )


def test_a_python_int_past_int64_and_uint64_is_refused_beside_a_complex_tensor_as_torch():
    """As beside every other dtype (torch: OverflowError); up to uint64's largest it is a
    number like any other."""
    with pytest.raises((OverflowError, RuntimeError)):
        torch.tensor([1j]) + (-(2**63) - 1)
    with pytest.raises(kael.ValueError, match="out of the range of int64 and uint64"):
        kael.tensor([1j]) + (-(2**63) - 1)
    assert (kael.tensor([1j]) + 2**63).tolist() == (torch.tensor([1j]) + 2**63).tolist()


@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_logical_ops_of_complex_tensors_read_each_ones_truth_as_torch(op):
    a = [0j, 1j, 2 + 0j, 0j, complex("nan")]
    b = [1 + 0j, 0j, 3j, 0j, 0j]
    for other in (kael.tensor(b), kael.tensor([1.0, 0.0, 0.0, 1.0, 2.0])):
        got = getattr(kael, op)(kael.tensor(a), other)
        want = getattr(torch, op)(torch.tensor(a), torch.from_numpy(other.numpy()))
        assert got.dtype is kael.bool and got.tolist() == want.tolist()
    got = getattr(kael.tensor(a), f"{op}_")(kael.tensor(b))  # written back into self's dtype
    want = getattr(torch.tensor(a), f"{op}_")(torch.tensor(b))
    assert got.dtype is kael.complex64 and got.tolist() == want.tolist()


INVERSE_TRIG = ["asin", "acos", "atan", "asinh", "acosh", "atanh", "sinc"]


def _compare_complex(got: np.ndarray, want: np.ndarray, tol: float) -> None:
    """Each part equal, or both NaN, or within tol of the whole value's magnitude."""
    scale = np.abs(want) * tol
    for part in (np.real, np.imag):
        g, w = part(got), part(want)
        same = (g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= scale)
        assert same.all(), (got[~same][:3], want[~same][:3])


@pytest.mark.parametrize("name", INVERSE_TRIG)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_inverse_trig_of_complex_tensors_match_torch(name, dtype):
    """Kahan's forms (branch cuts and signed zeros as C's casin/cacos/casinh/cacosh/catanh),
    C99 Annex G's infinities and NaNs, over 12 decades of magnitude."""
    rng = np.random.default_rng(7)
    z = (rng.standard_normal(500) + 1j * rng.standard_normal(500)) * 10.0 ** rng.uniform(-6, 6, 500)
    cuts = [complex(x, y) for x in (-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0) for y in (0.0, -0.0)]
    special = [
        complex(x, y)
        for x in (0.0, -0.0, 1.0, -2.0, math.inf, -math.inf, math.nan)
        for y in (0.0, -0.0, 1.0, -2.0, math.inf, -math.inf, math.nan)
    ]
    near_poles = [-1 + 1e-10j, -1.001 + 0j, 1e-10 + 1j, 1 + 1e-10j, -1e-10 - 1j]
    values = np.array([*z, *cuts, *[complex(0, y) for y in (-3.0, 3.0)], *near_poles, *special])
    got = getattr(kael, name)(kael.tensor(values, dtype=getattr(kael, dtype))).numpy()
    want = getattr(torch, name)(torch.tensor(values, dtype=getattr(torch, dtype))).numpy()
    _compare_complex(got, want, 2e-5 if dtype == "complex64" else 1e-11)
