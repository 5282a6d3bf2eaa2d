"""In-place ops against PyTorch and the chapter's rules: dtype never changes, checks in order.

binary_inplace runs, before writing anything: the result dtype's category fits self's,
self has no internal overlap (the message suggests clone()), and the broadcast does not
change self's shape. Then it writes in self's own layout, reads a partially aliased
operand from a copy, and bumps the storage's version counter. Float pow_ is left to the
vector-math tests.
"""

import numpy as np
import pytest
import torch
from kernel_helpers import KAEL_DTYPES

import kael
from kael.frontend.ops import ALIASES

TO_KAEL = KAEL_DTYPES
DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool]
DTYPE_IDS = ["f32", "f64", "i64", "bool"]
INPLACE_BINARY = ["add", "sub", "mul", "div", "pow"]

VALUES = {
    torch.float32: [-2.5, 3.0, 0.5, -7.0, 1.25, -0.0, 4.0, -0.5, 6.0, 0.0, -3.75, 9.5],
    torch.float64: [-2.5, 3.0, 0.5, -7.0, 1.25, -0.0, 4.0, -0.5, 6.0, 0.0, -3.75, 9.5],
    torch.int64: [-7, 3, 5, -2, 1, 4, -3, 6, 2, -9, 8, -1],
    torch.bool: [True, False, True, True, False, False, True, False, True, False, False, True],
}


def values(dtype: torch.dtype, shape: tuple, shift: int = 0) -> torch.Tensor:
    n = int(np.prod(shape))
    pool = VALUES[dtype]
    return torch.tensor([pool[(i + shift) % len(pool)] for i in range(n)], dtype=dtype).reshape(
        shape
    )


def to_kael(t: torch.Tensor) -> kael.Tensor:
    k = kael.tensor(t.contiguous().numpy())
    assert k.dtype is TO_KAEL[t.dtype] and k.shape == tuple(t.shape)
    return k


def assert_same(k: kael.Tensor, t: torch.Tensor) -> None:
    """Same shape, dtype and values (NaN equals NaN, signed zeros must match)."""
    assert k.shape == tuple(t.shape)
    assert k.dtype is TO_KAEL[t.dtype], (k.dtype, t.dtype)
    got, want = np.asarray(k.numpy()), t.numpy()
    np.testing.assert_array_equal(got, want)
    if t.is_floating_point():
        keep = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[keep]), np.signbit(want[keep]))


def version(t: kael.Tensor) -> int:
    return t._impl.storage.version


def _is_bool(x) -> bool:
    return x.dtype == torch.bool if isinstance(x, torch.Tensor) else isinstance(x, bool)


def expected_inplace(name: str, self_t: torch.Tensor, other):
    """torch's self after `self.name_(other)`, or the exception kael must raise."""
    if name in ("add", "pow") and _is_bool(self_t) and _is_bool(other):
        # The book: bool + bool is int64, a higher category than bool; pow refuses bool.
        return kael.TypeError
    target = self_t.clone()
    try:
        getattr(target, f"{name}_")(other)
    except RuntimeError:
        return kael.Error
    return target


def check_inplace(name: str, self_t: torch.Tensor, other) -> None:
    """kael's name_ returns self, keeps its dtype and storage, and matches torch (or raises)."""
    k = to_kael(self_t)
    k_other = to_kael(other) if isinstance(other, torch.Tensor) else other
    expected = expected_inplace(name, self_t, other)
    before, storage = version(k), k._impl.storage
    if isinstance(expected, type):
        with pytest.raises(expected):
            getattr(k, f"{name}_")(k_other)
        assert_same(k, self_t)  # nothing written
        assert version(k) == before
        return
    result = getattr(k, f"{name}_")(k_other)
    assert result is k
    assert k._impl.storage is storage
    assert_same(k, expected)
    assert version(k) == before + 1


# ---- dtype rules ------------------------------------------------------------------------------

PAIRS = [
    pytest.param(name, a, b, id=f"{name}-{DTYPE_IDS[DTYPES.index(a)]}-{DTYPE_IDS[DTYPES.index(b)]}")
    for name in INPLACE_BINARY
    for a in DTYPES
    for b in DTYPES
    if not (name == "pow" and a.is_floating_point)
]


@pytest.mark.parametrize(("name", "self_dtype", "other_dtype"), PAIRS)
def test_inplace_dtype_never_changes_and_values_match_torch(name, self_dtype, other_dtype):
    self_t = values(self_dtype, (3, 4))
    for other in (values(other_dtype, (4,), shift=1), values(other_dtype, (), shift=3)):
        check_inplace(name, self_t, other)


@pytest.mark.parametrize(
    ("name", "self_dtype"),
    [
        pytest.param(n, d, id=f"{n}-{i}")
        for n in INPLACE_BINARY
        for d, i in zip(DTYPES, DTYPE_IDS, strict=True)
        if not (n == "pow" and d.is_floating_point)
    ],
)
def test_inplace_with_python_scalars_matches_torch(name, self_dtype):
    self_t = values(self_dtype, (2, 3))
    for scalar in (True, -3, 2, 2.5, -0.0):
        if name == "pow" and (isinstance(scalar, float) or scalar == -3):
            continue  # float pow: vector math; negative exponents: their own test
        check_inplace(name, self_t, scalar)


@pytest.mark.parametrize(
    ("self_t", "name", "other"),
    [
        (torch.tensor([1, 2]), "add", 0.5),
        (torch.tensor([1, 2]), "add", torch.tensor([0.5, 1.0])),
        (torch.tensor([1, 2]), "sub", torch.tensor(0.5, dtype=torch.float64)),
        (torch.tensor([1, 2]), "div", 2),
        (torch.tensor([4, 2]), "div", torch.tensor([2, 1])),
        (torch.tensor([1, 2]), "pow", 0.5),
        (torch.tensor([True, False]), "add", 1),
        (torch.tensor([True, False]), "mul", 2),
        (torch.tensor([True, False]), "mul", 0.5),
    ],
    ids=[
        "int-add-float",
        "int-add-float-tensor",
        "int-sub-f64-zero-dim",
        "int-div-int",
        "int-div-int-tensor",
        "int-pow-float",
        "bool-add-int",
        "bool-mul-int",
        "bool-mul-float",
    ],
)
def test_result_of_a_higher_category_than_self_raises(self_t, name, other):
    k = to_kael(self_t)
    k_other = to_kael(other) if isinstance(other, torch.Tensor) else other
    with pytest.raises(RuntimeError):
        getattr(self_t.clone(), f"{name}_")(other)
    before = version(k)
    with pytest.raises(kael.TypeError, match="can't be cast"):
        getattr(k, f"{name}_")(k_other)
    assert_same(k, self_t)
    assert version(k) == before


@pytest.mark.parametrize(
    ("self_t", "name", "other"),
    [
        (torch.tensor([1, 2]), "add", True),
        (torch.tensor([1, 2]), "mul", torch.tensor([True, False])),
        (torch.tensor([1.5, 2.5]), "add", torch.tensor([1, 2])),
        (torch.tensor([1.5, 2.5]), "div", 2),
        (torch.tensor([True, False]), "mul", torch.tensor([True, True])),
        (torch.tensor([True, False]), "mul", False),
        (torch.tensor([1.5, 2.5], dtype=torch.float64), "sub", torch.tensor([0.1, 0.2])),
    ],
    ids=[
        "int-add-bool",
        "int-mul-bool-tensor",
        "float-add-int",
        "float-div-int",
        "bool-mul-bool",
        "bool-mul-false",
        "f64-sub-f32",
    ],
)
def test_result_of_the_same_or_lower_category_is_stored_in_self_dtype(self_t, name, other):
    check_inplace(name, self_t, other)


def test_float32_add_float64_works_and_rounds_to_float32():
    x = torch.tensor([1.0, 0.1, 3.0])
    y = torch.tensor([1e-8, 0.2, 2.0**-23], dtype=torch.float64)
    k = to_kael(x)
    k.add_(to_kael(y))
    assert k.dtype is kael.float32
    assert_same(k, x.clone().add_(y))
    assert k.tolist()[0] == 1.0  # 1 + 1e-8 rounds back to 1 in float32
    assert k.tolist()[1] == float(np.float32(0.1 + 0.2))


def test_bool_add_bool_in_place_raises_because_bool_plus_bool_is_int64():
    k = kael.tensor([True, False])
    with pytest.raises(kael.TypeError, match="can't be cast"):
        k.add_(kael.tensor([True, True]))
    assert k.tolist() == [True, False]
    assert torch.tensor([True, False]).add_(torch.tensor([True, True])).dtype == torch.bool


# ---- overlap, order of the checks, shapes -----------------------------------------------------

OVERLAP_CALLS = {
    "add_": lambda t: t.add_(1.0),
    "sub_": lambda t: t.sub_(kael.ones(3)),
    "mul_": lambda t: t.mul_(2),
    "div_": lambda t: t.div_(2.0),
    "clamp_": lambda t: t.clamp_(0.0, 1.0),
    "masked_fill_": lambda t: t.masked_fill_(kael.tensor([True, False, True]), 5.0),
    "copy_": lambda t: t.copy_(kael.ones(2, 3)),
    "iadd": lambda t: t.__iadd__(1.0),
}


@pytest.mark.parametrize("name", list(OVERLAP_CALLS))
def test_self_with_internal_overlap_raises_and_suggests_clone(name):
    call = OVERLAP_CALLS[name]
    base = kael.tensor([[1.0, 2.0, 3.0]])
    expanded = base.expand(2, 3)
    with pytest.raises(kael.Error, match=r"clone\(\)"):
        call(expanded)
    assert base.tolist() == [[1.0, 2.0, 3.0]]
    t = torch.tensor([[1.0, 2.0, 3.0]]).expand(2, 3)
    with pytest.raises(RuntimeError, match=r"clone\(\)"):
        t.add_(1.0)
    cloned = expanded.clone()
    assert call(cloned) is cloned  # the suggested clone() works


def test_integer_pow_on_an_expanded_self_raises():
    with pytest.raises(kael.Error, match=r"clone\(\)"):
        kael.tensor([[2, 3]]).expand(2, 2).pow_(2)


def test_dtype_check_runs_before_the_overlap_check():
    expanded = kael.tensor([[1, 2, 3]]).expand(2, 3)
    with pytest.raises(kael.TypeError, match="can't be cast"):
        expanded.add_(0.5)


def test_overlap_check_runs_before_the_shape_check():
    expanded = kael.tensor([[1.0, 2.0, 3.0]]).expand(2, 3)
    with pytest.raises(kael.Error, match=r"clone\(\)") as info:
        expanded.add_(kael.ones(4, 2, 3))
    assert not isinstance(info.value, kael.ValueError)


@pytest.mark.parametrize(
    ("self_shape", "other_shape"), [((3,), (2, 3)), ((1, 3), (2, 3)), ((2, 1), (2, 3)), ((), (1,))]
)
def test_broadcast_that_would_change_self_shape_raises(self_shape, other_shape):
    with pytest.raises(RuntimeError):
        torch.zeros(self_shape).add_(torch.ones(other_shape))
    k = kael.zeros(*self_shape)
    for op in ("add_", "sub_", "mul_", "div_"):
        with pytest.raises(kael.ValueError, match="doesn't match the broadcast shape"):
            getattr(k, op)(kael.ones(*other_shape))
    with pytest.raises(kael.ValueError):
        k.clamp_(kael.ones(*other_shape))
    with pytest.raises(kael.ValueError):
        k.masked_fill_(kael.ones(*other_shape, dtype=kael.bool), 1.0)
    assert k.tolist() == torch.zeros(self_shape).tolist()


@pytest.mark.parametrize(
    ("self_shape", "other_shape"), [((2, 3), (3,)), ((2, 3), (2, 1)), ((2, 3), ()), ((0, 3), (3,))]
)
def test_broadcast_of_other_to_self_shape_works(self_shape, other_shape):
    self_t = values(torch.float32, self_shape)
    check_inplace("add", self_t, values(torch.float32, other_shape, shift=2))
    check_inplace("mul", self_t, values(torch.int64, other_shape, shift=2))


# ---- aliasing and layouts ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["add", "sub", "mul"])
def test_partial_alias_of_self_is_read_from_a_copy(name):
    t = torch.arange(16.0).reshape(4, 4)
    k = to_kael(t)
    getattr(k, f"{name}_")(k.T)
    assert_same(k, getattr(torch, name)(t, t.T))  # torch refuses; the book copies first
    c = t.clone()
    with pytest.raises(RuntimeError, match="single memory location"):
        getattr(c, f"{name}_")(c.T)
    t1 = torch.arange(6.0)
    k1 = to_kael(t1)
    getattr(k1[1:], f"{name}_")(k1[:-1])  # shifted by one element
    want = t1.clone()
    want[1:] = getattr(torch, name)(t1[1:], t1[:-1])
    assert_same(k1, want)


def test_add_of_own_transpose_equals_torchs_out_of_place_sum():
    t = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    k = to_kael(t)
    k.add_(k.T)
    assert k.tolist() == [[2.0, 6.0, 10.0], [6.0, 10.0, 14.0], [10.0, 14.0, 18.0]]
    assert_same(k, t + t.T)
    k2 = to_kael(t)
    k2 += k2.T
    assert_same(k2, t + t.T)
    k3 = to_kael(t)
    k3.T.add_(k3)
    assert_same(k3, (t + t.T).T)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_inplace_with_itself_in_the_same_layout(name):
    t = torch.tensor([[1.5, -2.0, 3.0], [4.0, 0.5, -6.0]])
    k = to_kael(t)
    getattr(k, f"{name}_")(k)
    assert_same(k, getattr(t.clone(), f"{name}_")(t.clone()))
    kt = to_kael(t)
    view = kt.T
    getattr(view, f"{name}_")(view)  # same non-contiguous layout on both sides
    assert_same(kt, getattr(torch, name)(t, t))


def test_integer_pow_of_itself():
    t = torch.tensor([2, 3, -2, 1])
    k = to_kael(t)
    k.pow_(k)
    assert k.tolist() == [4, 27, 0, 1]
    assert_same(k, torch.pow(t, t))


LAYOUT_VIEWS = {
    "transposed": ((4, 3), lambda x: x.T),
    "stepped": ((6, 8), lambda x: x[::2, 1::2]),
    "sliced_offset": ((5, 4), lambda x: x[1:4]),
    "transposed_stepped": ((8, 6), lambda x: x[1::2, ::2].T),
}


@pytest.mark.parametrize("layout", list(LAYOUT_VIEWS))
@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda v, o: v.add_(o), id="add_"),
        pytest.param(lambda v, o: v.sub_(2.5), id="sub_"),
        pytest.param(lambda v, o: v.mul_(o), id="mul_"),
        pytest.param(lambda v, o: v.div_(o), id="div_"),
        pytest.param(lambda v, o: v.clamp_(-1.0, 2.0), id="clamp_"),
        pytest.param(lambda v, o: v.masked_fill_(o > 0, 7.0), id="masked_fill_"),
        pytest.param(lambda v, o: v.copy_(o), id="copy_"),
        pytest.param(lambda v, o: v.fill_(-1.5), id="fill_"),
        pytest.param(lambda v, o: v.zero_(), id="zero_"),
    ],
)
def test_non_contiguous_self_is_written_in_its_own_layout(layout, call):
    shape, view = LAYOUT_VIEWS[layout]
    base_t = values(torch.float32, shape)
    base_k = to_kael(base_t)
    view_k, view_t = view(base_k), view(base_t)
    strides, offset = view_k.strides(), view_k.storage_offset()
    other_t = values(torch.float32, (3, 4), shift=5) + 0.25
    other_t = other_t[:, :1].expand(3, 4)  # an expanded operand too
    assert call(view_k, to_kael(other_t)) is view_k
    call(view_t, other_t)
    assert view_k.strides() == strides and view_k.storage_offset() == offset
    assert_same(view_k, view_t)
    assert_same(base_k, base_t)  # elements outside the view are untouched


# ---- the version counter ----------------------------------------------------------------------

BUMPS = {
    "add_": lambda t: t.add_(1.0),
    "sub_": lambda t: t.sub_(kael.ones(3)),
    "mul_": lambda t: t.mul_(2),
    "div_": lambda t: t.div_(2.0),
    "pow_": lambda t: t.pow_(2),
    "clamp_": lambda t: t.clamp_(min=0.0),
    "clip_": lambda t: t.clip_(max=1.0),
    "masked_fill_": lambda t: t.masked_fill_(kael.tensor([True, False, True]), 5.0),
    "copy_": lambda t: t.copy_(kael.ones(3)),
    "fill_": lambda t: t.fill_(3),
    "zero_": lambda t: t.zero_(),
    "iadd": lambda t: t.__iadd__(1),
    "isub": lambda t: t.__isub__(1),
    "imul": lambda t: t.__imul__(2),
    "itruediv": lambda t: t.__itruediv__(2),
}


@pytest.mark.parametrize("name", list(BUMPS))
def test_every_in_place_write_bumps_the_storage_version_once(name):
    t = kael.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    if name == "pow_":
        t = kael.tensor([[1, -2, 3], [4, 5, -6]])
    row = t[1]  # a view: same storage, same counter
    before = version(t)
    assert version(row) == before
    BUMPS[name](row)
    assert version(t) == before + 1
    assert version(row) == before + 1


def test_a_refused_in_place_write_does_not_bump_the_version():
    t = kael.tensor([1, 2, 3])
    before = version(t)
    for bad in (lambda: t.add_(0.5), lambda: t.div_(2), lambda: t.add_(kael.ones(2, 3))):
        with pytest.raises(kael.Error):
            bad()
    assert version(t) == before
    assert t.tolist() == [1, 2, 3]


# ---- pow_ -------------------------------------------------------------------------------------


def test_integer_pow_in_place_by_squaring_wraps():
    t = torch.tensor([2, 3, -2, 10])
    check_inplace("pow", t, 63)
    check_inplace("pow", t, torch.tensor([62, 40, 63, 19]))
    k = to_kael(t)
    k.pow_(63)
    assert k.tolist()[0] == -(2**63)


def test_integer_pow_in_place_with_negative_tensor_exponent_truncates():
    t = torch.tensor([2, 1, -1, -1, 0])
    k = to_kael(t)
    k.pow_(kael.tensor([-1, -1, -1, -2, -1]))
    assert k.tolist() == [0, 1, -1, 1, 0]
    assert_same(k, t.clone().pow_(torch.tensor([-1, -1, -1, -2, -1])))


def test_integer_pow_in_place_with_negative_python_int_raises_value_error():
    k = kael.tensor([1, 2, 3])
    with pytest.raises(kael.ValueError, match="negative integer powers"):
        k.pow_(-1)
    assert k.tolist() == [1, 2, 3]
    assert k.pow_(0).tolist() == [1, 1, 1]


def test_bool_pow_in_place_raises_type_error():
    with pytest.raises(kael.TypeError):
        kael.tensor([True, False]).pow_(kael.tensor([True, True]))
    with pytest.raises(kael.TypeError):
        kael.tensor([True, False]).pow_(2)  # int64 result does not fit bool


# ---- clamp_ -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64], ids=DTYPE_IDS[:3])
@pytest.mark.parametrize(("lo", "hi"), [(-1, None), (None, 2), (-1, 2), (3, -1)])
def test_clamp_in_place_matches_torch(dtype, lo, hi):
    t = values(dtype, (3, 4))
    k = to_kael(t)
    before = version(k)
    assert k.clamp_(lo, hi) is k
    assert_same(k, t.clone().clamp_(lo, hi))
    assert version(k) == before + 1


def test_clamp_in_place_with_tensor_bounds_and_nan():
    t = torch.tensor([[-2.0, 0.0, 3.0], [5.0, -5.0, 0.5]])
    lo, hi = torch.tensor([-1.0, float("nan"), 0.0]), torch.tensor([[1.0], [4.0]])
    k = to_kael(t)
    k.clamp_(to_kael(lo), to_kael(hi))
    assert_same(k, t.clone().clamp_(lo, hi))


def test_clamp_in_place_refuses_higher_category_bounds_and_no_bounds():
    t = torch.tensor([0, 1, 2])
    with pytest.raises(RuntimeError):
        t.clone().clamp_(0.5)
    k = to_kael(t)
    with pytest.raises(kael.TypeError, match="can't be cast"):
        k.clamp_(0.5)
    with pytest.raises(kael.TypeError):
        kael.tensor([True, False]).clamp_(min=0)
    with pytest.raises(kael.ValueError, match="at least one"):
        k.clamp_()
    assert k.tolist() == [0, 1, 2]
    assert_same(k.clamp_(1, 1), torch.tensor([1, 1, 1]))  # int bounds fit int64


@pytest.mark.parametrize(
    ("lo", "hi"), [(True, None), (None, False), (True, False)], ids=["min", "max", "both"]
)
def test_clamp_in_place_refuses_bool_like_clamp(lo, hi):
    # Bool number bounds on a bool tensor pass the in-place dtype check, but PyTorch has no
    # bool clamp kernel for them: clamp_ refuses it as clamp does, before writing anything.
    t = torch.tensor([True, False])
    with pytest.raises(NotImplementedError):
        t.clone().clamp_(lo, hi)
    k = kael.tensor([True, False])
    message = "does not support bool with number bounds, only with one Tensor bound$"
    with pytest.raises(kael.TypeError, match=f"^clamp {message}"):
        kael.clamp(k, lo, hi)
    with pytest.raises(kael.TypeError, match=f"^clamp_ {message}"):
        k.clamp_(lo, hi)
    assert k.tolist() == [True, False]


# ---- masked_fill_ -----------------------------------------------------------------------------


def test_masked_fill_in_place_with_same_and_narrower_masks():
    t = values(torch.float64, (3, 4))
    for mask in (
        torch.tensor([True, False, False, True]),
        torch.tensor([[True], [False], [True]]),
        torch.tensor(VALUES[torch.bool]).reshape(3, 4),
        torch.tensor(True),
    ):
        k = to_kael(t)
        assert k.masked_fill_(to_kael(mask), -1.5) is k
        assert_same(k, t.clone().masked_fill_(mask, -1.5))


def test_masked_fill_in_place_with_a_wider_mask_raises():
    t = torch.tensor([1.0, 2.0, 3.0])
    mask = torch.tensor([[True, False, True], [False, False, False]])
    with pytest.raises(RuntimeError):
        t.clone().masked_fill_(mask, 0.0)
    k = to_kael(t)
    with pytest.raises(kael.ValueError, match="doesn't match the broadcast shape"):
        k.masked_fill_(to_kael(mask), 0.0)
    assert k.tolist() == [1.0, 2.0, 3.0]


def test_masked_fill_in_place_converts_the_value_to_self_dtype():
    t = torch.tensor([1, -2, 3])
    mask = torch.tensor([True, True, False])
    for value in (2.7, -2.7, True, torch.tensor(9), torch.tensor(-4.5)):
        k = to_kael(t)
        k.masked_fill_(to_kael(mask), to_kael(value) if isinstance(value, torch.Tensor) else value)
        assert_same(k, t.clone().masked_fill_(mask, value))
    b = torch.tensor([True, False, False])
    k = to_kael(b)
    k.masked_fill_(to_kael(torch.tensor([False, True, False])), 2)
    assert_same(k, b.clone().masked_fill_(torch.tensor([False, True, False]), 2))


def test_masked_fill_in_place_refuses_a_non_bool_mask():
    k = kael.tensor([1.0, 2.0])
    with pytest.raises(kael.TypeError, match="bool mask"):
        k.masked_fill_(kael.tensor([1, 0]), 0.0)
    with pytest.raises(RuntimeError, match="boolean"):
        torch.tensor([1.0, 2.0]).masked_fill_(torch.tensor([1, 0]), 0.0)


# ---- copy_, fill_, zero_ ----------------------------------------------------------------------


@pytest.mark.parametrize("dst", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("src", DTYPES, ids=DTYPE_IDS)
def test_copy_converts_to_self_dtype_and_broadcasts(dst, src):
    source = values(src, (4,), shift=1)
    if src.is_floating_point:
        source = source * 1.7  # fractions: float to int truncates toward zero
    self_t = values(dst, (3, 4))
    k = to_kael(self_t)
    before = version(k)
    assert k.copy_(to_kael(source)) is k
    assert_same(k, self_t.clone().copy_(source))
    assert version(k) == before + 1


def test_copy_of_a_partial_alias_reads_the_source_first():
    t = torch.arange(9.0).reshape(3, 3)
    k = to_kael(t)
    k.copy_(k.T)
    assert_same(k, t.T.clone())  # torch refuses this copy; the book copies the source first
    t1 = torch.arange(5)
    k1 = to_kael(t1)
    k1[1:].copy_(k1[:-1])
    assert k1.tolist() == [0, 0, 1, 2, 3]


def test_copy_refuses_wider_sources_and_non_tensors():
    k = kael.tensor([1.0, 2.0])
    with pytest.raises(kael.Error):
        k.copy_(kael.ones(2, 2))
    with pytest.raises(RuntimeError):
        torch.tensor([1.0, 2.0]).copy_(torch.ones(2, 2))
    with pytest.raises(kael.TypeError):
        k.copy_([1.0, 2.0])
    assert k.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("value", [2.7, -2.7, 0, True, -(2**40), float("nan")])
def test_fill_converts_the_value_to_self_dtype(dtype, value):
    t = values(dtype, (2, 3))
    k = to_kael(t)
    assert k.fill_(value) is k
    if dtype == torch.int64 and value != value:
        assert k.tolist() == [[0] * 3] * 2  # the book maps NaN to 0; torch's is platform-defined
        return
    assert_same(k, t.clone().fill_(value))


def test_fill_with_a_zero_dim_tensor_and_refusal_of_wider_ones():
    t = torch.zeros(2, 2)
    k = to_kael(t)
    k.fill_(to_kael(torch.tensor(3.5, dtype=torch.float64)))
    assert_same(k, t.clone().fill_(torch.tensor(3.5, dtype=torch.float64)))
    with pytest.raises(kael.ValueError, match="0-dim"):
        k.fill_(kael.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError):
        t.clone().fill_(torch.tensor([1.0, 2.0]))


def test_fill_and_zero_on_an_expanded_self_write_the_shared_element():
    base_t = torch.tensor([[1.0], [2.0]])
    base_k = to_kael(base_t)
    base_k.expand(2, 3).fill_(4.0)
    base_t.expand(2, 3).fill_(4.0)  # torch allows it too: every copy gets one value
    assert_same(base_k, base_t)
    base_k.expand(2, 3).zero_()
    base_t.expand(2, 3).zero_()
    assert_same(base_k, base_t)


def test_fill_and_zero_of_empty_tensors():
    for shape in ((0,), (2, 0)):
        k = kael.zeros(*shape)
        assert k.fill_(1.0) is k and k.zero_() is k
        assert k.shape == shape


def test_zero_keeps_dtype_and_writes_minus_zero_free_zeros():
    for dtype in DTYPES:
        t = values(dtype, (2, 3))
        k = to_kael(t)
        assert k.zero_() is k
        assert_same(k, t.clone().zero_())


@pytest.mark.parametrize(
    ("op", "torch_op"),
    [("__ifloordiv__", "__ifloordiv__"), ("__imod__", "__imod__"), ("__ipow__", "__ipow__")],
)
def test_compound_floor_mod_pow_operators_write_in_place(op, torch_op):
    k = kael.tensor([[-7, 7, 9], [5, -3, 8]])
    t = torch.tensor([[-7, 7, 9], [5, -3, 8]])
    alias = k
    out = getattr(k, op)(2)
    getattr(t, torch_op)(2)
    assert out is alias
    assert k.tolist() == t.tolist()


def test_floor_divide_and_remainder_in_place_keep_self_dtype_and_refuse_a_float_result():
    k = kael.tensor([7, -7])
    k.floor_divide_(kael.tensor([2, 2]))
    assert k.tolist() == [3, -4] and k.dtype is kael.int64
    with pytest.raises(kael.TypeError, match="float32 can't be cast"):
        k.remainder_(2.5)


@pytest.mark.parametrize("op", ["and", "or", "xor"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.bool], ids=["i64", "bool"])
def test_bitwise_augmented_assignment_writes_in_place_like_torch(op, dtype):
    t, other = values(dtype, (3, 4)), values(dtype, (4,), shift=5)
    k = kael.from_numpy(t.numpy().copy())
    view = k[1:]  # shares k's storage: sees the write only if it happens in place
    want = getattr(t, f"__i{op}__")(other)
    got = getattr(k, f"__i{op}__")(kael.from_numpy(other.numpy().copy()))
    assert got is k
    np.testing.assert_array_equal(k.numpy(), want.numpy())
    np.testing.assert_array_equal(view.numpy(), want[1:].numpy())
    scalar = True if dtype is torch.bool else 3
    getattr(k, f"bitwise_{op}_")(scalar)
    getattr(want, f"bitwise_{op}_")(scalar)
    np.testing.assert_array_equal(k.numpy(), want.numpy())


# ---- two storages over one array ----------------------------------------------------------------


def _twins(array: np.ndarray) -> tuple[kael.Tensor, kael.Tensor]:
    """Two kael tensors over one NumPy array: two Storage objects, one memory."""
    a, b = kael.from_numpy(array), kael.from_numpy(array)
    assert a._impl.storage is not b._impl.storage
    return a, b


def test_in_place_reads_a_twin_storage_before_writing_over_it():
    # Storage identity misses these (PyTorch gives the hazard's bits here); kael copies the
    # operand first, as for x.add_(x.T), so the result is what a clone would give.
    a, b = _twins(np.arange(9, dtype=np.float32).reshape(3, 3))
    expected = a.clone() + a.clone().T
    a.add_(b.T)
    assert kael.equal(a, expected)


@pytest.mark.parametrize("n", [5, 3000])  # the fast door's size and the full door's
def test_in_place_on_a_shifted_twin_reads_every_element_first(n):
    a, b = _twins(np.arange(n, dtype=np.float32))
    expected = a[1:].clone() + a[:-1].clone()
    a[1:].add_(b[:-1])
    assert kael.equal(a[1:], expected)


def test_copy_from_a_shifted_twin_moves_every_element():
    a, b = _twins(np.arange(3000, dtype=np.float32))
    expected = a[:-1].clone()
    a[1:].copy_(b[:-1])
    assert kael.equal(a[1:], expected)


def test_a_twin_at_the_same_place_needs_no_copy_and_stays_exact():
    a, b = _twins(np.arange(1000, dtype=np.float32))
    a.mul_(b)
    assert kael.equal(a, kael.arange(1000, dtype=kael.float32) ** 2)


def test_index_add_with_a_twin_source_raises_naming_it():
    array = np.zeros(8, dtype=np.float32)
    a, b = _twins(array)
    with pytest.raises(kael.Error, match="source shares memory with self"):
        a.index_add_(0, kael.tensor([0, 1]), b[2:4])


# ---- unary and more in-place methods, derived from the out-of-place functions -----------------

ALL_DTYPES = [*DTYPES, torch.float16]
ALL_DTYPE_IDS = [*DTYPE_IDS, "f16"]
# Exact ops: values must be identical to torch's. The rest are transcendental: allclose with
# a tolerance of a few ulps of the dtype.
EXACT_UNARY = [
    "abs",
    "absolute",
    "neg",
    "negative",
    "sign",
    "sgn",
    "floor",
    "ceil",
    "round",
    "trunc",
    "fix",
    "square",
    "reciprocal",
    "logical_not",
    "bitwise_not",
    "frac",
    "nan_to_num",
]
APPROX_UNARY = [
    "sqrt",
    "rsqrt",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sigmoid",
    "erf",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "arcsin",
    "arccos",
    "arctan",
    "arcsinh",
    "arccosh",
    "arctanh",
    "deg2rad",
    "rad2deg",
    "sinc",
]
UNARY_METHODS = EXACT_UNARY + APPROX_UNARY
TOLERANCE = {  # (rtol, atol) of the transcendental ops by dtype
    torch.float16: (2e-3, 1e-3),
    torch.float32: (2e-6, 1e-6),
    torch.float64: (1e-13, 1e-14),
}
VALUES[torch.float16] = VALUES[torch.float32]
SPECIAL = [float("nan"), float("inf"), -float("inf"), 0.5, -0.0, 2.0]  # nan_to_num's inputs

# (shape of the base, the view written in place): each write must reach the base.
SELF_LAYOUTS = {
    "contiguous": ((3, 4), lambda x: x),
    "transposed": ((4, 3), lambda x: x.T),
    "sliced": ((4, 6), lambda x: x[1:3, ::2]),
    "zero_dim": ((), lambda x: x),
    "empty": ((0, 3), lambda x: x),
}


def assert_matches(k: kael.Tensor, t: torch.Tensor, exact: bool) -> None:
    """k equals t (exact ops, signed zeros included), or is close to it (NaN where t is)."""
    if exact or not t.is_floating_point():
        assert_same(k, t)
        return
    assert k.shape == tuple(t.shape) and k.dtype is TO_KAEL[t.dtype]
    rtol, atol = TOLERANCE[t.dtype]
    np.testing.assert_allclose(
        np.asarray(k.numpy(), np.float64), t.double().numpy(), rtol=rtol, atol=atol
    )


def check_method_like_torch(method: str, dtype, call, exact: bool, layout: str) -> None:
    """`call(view, kael)` on a view of a kael tensor and on torch's: the same values written
    through the view into the base, self returned, the version moved once; or, where torch
    refuses, a kael.Error and nothing written."""
    shape, view = SELF_LAYOUTS[layout]
    base_t = values(dtype, shape)
    if method == "nan_to_num" and dtype.is_floating_point:
        base_t = torch.tensor(
            [SPECIAL[i % len(SPECIAL)] for i in range(base_t.numel())], dtype=dtype
        ).reshape(shape)
    base_k = to_kael(base_t)
    view_k, view_t = view(base_k), view(base_t)
    before = version(base_k)
    try:
        got_t = call(view_t, torch)
    except (RuntimeError, TypeError) as refusal:
        with pytest.raises(kael.Error):
            call(view_k, kael)
        assert_same(base_k, base_t)  # nothing written
        assert version(base_k) == before, refusal
        return
    assert got_t is view_t
    assert call(view_k, kael) is view_k
    assert view_k.dtype is TO_KAEL[dtype]
    assert_matches(base_k, base_t, exact)  # the base sees the write, in self's dtype
    assert version(base_k) == before + 1


UNARY_CASES = [
    pytest.param(m, d, id=f"{m}-{i}")
    for m in UNARY_METHODS
    for d, i in zip(ALL_DTYPES, ALL_DTYPE_IDS, strict=True)
]


@pytest.mark.parametrize(("method", "dtype"), UNARY_CASES)
def test_unary_in_place_writes_torchs_values_into_self_through_any_view(method, dtype):
    for layout in SELF_LAYOUTS:
        call = lambda x, lib: getattr(x, f"{method}_")()  # noqa: E731
        check_method_like_torch(method, dtype, call, method in EXACT_UNARY, layout)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16], ids=str)
@pytest.mark.parametrize(
    "args",
    [((1.0, 2.0, -3.0), {}), ((), {"nan": 7.0}), ((), {"posinf": 1.5, "neginf": -1.5})],
    ids=["positional", "nan", "infinities"],
)
def test_nan_to_num_in_place_takes_its_replacement_values(dtype, args):
    positional, keywords = args
    for layout in SELF_LAYOUTS:
        call = lambda x, lib: x.nan_to_num_(*positional, **keywords)  # noqa: E731
        check_method_like_torch("nan_to_num", dtype, call, True, layout)


def _other(lib, x, dtype, shift: int = 5):
    """A second operand for x: a row broadcast over x (0-d for a 0-d x)."""
    t = values(dtype, tuple(x.shape[-1:]), shift=shift)
    if dtype.is_floating_point:
        t = t.abs() + 0.5  # xlogy's log and lerp's end: positive values
    return t if lib is torch else to_kael(t)


# method: (exact, the call given self, the library and self's dtype)
BINARY_METHODS = {
    **{
        name: (True, lambda x, lib, d, n=name: getattr(x, f"{n}_")(_other(lib, x, d)))
        for name in [
            "eq",
            "ne",
            "lt",
            "le",
            "gt",
            "ge",
            "greater",
            "greater_equal",
            "less",
            "less_equal",
            "not_equal",
            "logical_and",
            "logical_or",
            "logical_xor",
            "multiply",
            "true_divide",
        ]
    },
    "subtract": (False, lambda x, lib, d: x.subtract_(_other(lib, x, d), alpha=2)),
    "atan2": (False, lambda x, lib, d: x.atan2_(_other(lib, x, d))),
    "arctan2": (False, lambda x, lib, d: x.arctan2_(_other(lib, x, d))),
    "hypot": (False, lambda x, lib, d: x.hypot_(_other(lib, x, d))),
    "xlogy": (False, lambda x, lib, d: x.xlogy_(_other(lib, x, d))),
    "lerp": (False, lambda x, lib, d: x.lerp_(_other(lib, x, d), 0.3)),
    "lerp_tensor_weight": (
        False,
        lambda x, lib, d: x.lerp_(_other(lib, x, d), _other(lib, x, d, 2)),
    ),
    # math_functions.py's: exact where the function is (integers, bit steps, a step function)
    "heaviside": (True, lambda x, lib, d: x.heaviside_(_other(lib, x, d))),
    "gcd": (True, lambda x, lib, d: x.gcd_(_other(lib, x, d))),
    "lcm": (True, lambda x, lib, d: x.lcm_(_other(lib, x, d))),
    "nextafter": (True, lambda x, lib, d: x.nextafter_(_other(lib, x, d))),
    "ldexp": (False, lambda x, lib, d: x.ldexp_(_other(lib, x, d))),
    "float_power": (False, lambda x, lib, d: x.float_power_(2)),  # self must be float64
    "float_power_tensor": (False, lambda x, lib, d: x.float_power_(_other(lib, x, d))),
}


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ALL_DTYPE_IDS)
@pytest.mark.parametrize("method", list(BINARY_METHODS))
def test_binary_in_place_writes_torchs_values_into_self_through_any_view(method, dtype):
    exact, call = BINARY_METHODS[method]
    for layout in SELF_LAYOUTS:
        check_method_like_torch(method, dtype, lambda x, lib: call(x, lib, dtype), exact, layout)


@pytest.mark.parametrize("other_dtype", ALL_DTYPES, ids=ALL_DTYPE_IDS)
@pytest.mark.parametrize("self_dtype", ALL_DTYPES, ids=ALL_DTYPE_IDS)
@pytest.mark.parametrize("method", ["eq", "lt", "ge", "logical_xor", "xlogy"])
def test_comparison_and_logic_results_are_stored_in_self_dtype_like_torch(
    method, self_dtype, other_dtype
):
    def call(x, lib):
        other = values(other_dtype, (4,), shift=3)
        return getattr(x, f"{method}_")(other if lib is torch else to_kael(other))

    check_method_like_torch(method, self_dtype, call, method != "xlogy", "contiguous")


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ALL_DTYPE_IDS)
@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda x: x.eq_(2.5), id="eq_"),
        pytest.param(lambda x: x.not_equal_(0), id="not_equal_"),
        pytest.param(lambda x: x.less_equal_(True), id="less_equal_"),
        pytest.param(lambda x: x.multiply_(3), id="multiply_"),
        pytest.param(lambda x: x.subtract_(1, alpha=2), id="subtract_"),
        pytest.param(lambda x: x.true_divide_(4), id="true_divide_"),
        pytest.param(lambda x: x.xlogy_(2.0), id="xlogy_"),
    ],
)
def test_binary_in_place_with_a_python_number_matches_torch(dtype, call):
    check_method_like_torch("", dtype, lambda x, lib: call(x), False, "transposed")


def test_in_place_aliases_are_their_bases_methods():
    pairs = {
        "absolute_": "abs_", "negative_": "neg_", "fix_": "trunc_", "arcsin_": "asin_",
        "arccos_": "acos_", "arctan_": "atan_", "arcsinh_": "asinh_", "arccosh_": "acosh_",
        "arctanh_": "atanh_", "arctan2_": "atan2_", "greater_": "gt_", "greater_equal_": "ge_",
        "less_": "lt_", "less_equal_": "le_", "not_equal_": "ne_", "multiply_": "mul_",
        "subtract_": "sub_", "true_divide_": "div_",
    }  # fmt: skip
    for alias, base in pairs.items():
        assert getattr(kael.Tensor, alias) is getattr(kael.Tensor, base), alias


@pytest.mark.parametrize(
    ("alias", "args"),
    [
        ("fix", ()),
        ("arcsin", ()),
        ("arccos", ()),
        ("arctan", ()),
        ("arcsinh", ()),
        ("arccosh", ()),
        ("arctanh", ()),
        ("arctan2", (torch.tensor([[0.5, -2.0, 3.0]]),)),
    ],
)
def test_torch_level_aliases_compute_as_torch_as_function_and_method(alias, args):
    t = torch.tensor([[-0.75, 0.25, 0.5], [1.5, -2.5, 4.0]])
    k_args = [to_kael(a) for a in args]
    want = getattr(torch, alias)(t, *args)
    assert_matches(getattr(kael, alias)(to_kael(t), *k_args), want, alias == "fix")
    assert_matches(getattr(to_kael(t), alias)(*k_args), getattr(t, alias)(*args), alias == "fix")


# ---- refusals of the new in-place methods -------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "dtype", "named"),
    [
        ("sqrt", kael.int64, "float32.*int64"),
        ("exp", kael.bool, "float32.*bool"),
        ("reciprocal", kael.int64, "float32.*int64"),
        ("log10", kael.int64, "float32.*int64"),
        ("asin", kael.bool, "float32.*bool"),
        ("square", kael.bool, "int64.*bool"),
    ],
)
def test_a_float_result_in_an_integer_self_raises_naming_both_dtypes(method, dtype, named):
    x = kael.ones(3, dtype=dtype)
    with pytest.raises(kael.TypeError, match=f"{method}_.*{named}"):
        getattr(x, f"{method}_")()
    assert version(x) == 0 and x.tolist() == [1, 1, 1]


EXPANDED_CALLS = {
    **{f"{m}_": lambda x, m=m: getattr(x, f"{m}_")() for m in UNARY_METHODS if m != "bitwise_not"},
    "nan_to_num_(1.0)": lambda x: x.nan_to_num_(1.0),
    **{
        f"{m}_": lambda x, m=m: getattr(x, f"{m}_")(kael.ones(3))
        for m in ("eq", "greater", "logical_or", "atan2", "hypot", "xlogy", "multiply")
    },
    "subtract_": lambda x: x.subtract_(kael.ones(3), alpha=2),
    "lerp_": lambda x: x.lerp_(kael.ones(3), 0.5),
}


@pytest.mark.parametrize("name", list(EXPANDED_CALLS))
def test_in_place_on_an_expanded_tensor_raises_internal_overlap(name):
    method = name.split("(")[0].removesuffix("_")
    named = ALIASES.get(method, method)  # an alias's method is its base's: named so
    base = kael.tensor([[0.25, 0.5, 0.75]])
    with pytest.raises(kael.Error, match=rf"{named}_.*clone\(\)"):
        EXPANDED_CALLS[name](base.expand(2, 3))
    assert base.tolist() == [[0.25, 0.5, 0.75]] and version(base) == 0


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda x, y: x.eq_(y), id="eq_"),
        pytest.param(lambda x, y: x.greater_(y), id="greater_"),
        pytest.param(lambda x, y: x.logical_and_(y), id="logical_and_"),
        pytest.param(lambda x, y: x.atan2_(y), id="atan2_"),
        pytest.param(lambda x, y: x.hypot_(y), id="hypot_"),
        pytest.param(lambda x, y: x.xlogy_(y), id="xlogy_"),
        pytest.param(lambda x, y: x.lerp_(y, 0.5), id="lerp_"),
        pytest.param(lambda x, y: x.subtract_(y, alpha=2), id="subtract_"),
    ],
)
def test_a_broadcast_that_would_change_self_shape_raises_naming_both_shapes(call):
    x = kael.ones(3)
    with pytest.raises(kael.ValueError, match=r"\[3\].*\[2, 3\]"):
        call(x, kael.ones(2, 3))
    assert x.tolist() == [1.0, 1.0, 1.0] and version(x) == 0
    with pytest.raises(RuntimeError):
        call(torch.ones(3), torch.ones(2, 3))


@pytest.mark.parametrize(
    ("call", "named"),
    [
        pytest.param(lambda x: x.eq_("a"), "eq_.*str", id="eq_-str"),
        pytest.param(lambda x: x.not_equal_(None), "ne_.*NoneType", id="not_equal_-None"),
        pytest.param(lambda x: x.logical_and_(1), "logical_and_.*other.*int", id="logical_and_"),
        pytest.param(lambda x: x.logical_xor_(True), "logical_xor_.*other.*bool", id="xor-bool"),
        pytest.param(lambda x: x.atan2_(2.0), "atan2_.*other.*float", id="atan2_-number"),
        pytest.param(lambda x: x.arctan2_(2.0), "atan2_.*other.*float", id="arctan2_-number"),
        pytest.param(lambda x: x.hypot_(2), "hypot_.*other.*int", id="hypot_-number"),
        pytest.param(lambda x: x.lerp_(2.0, 0.5), "lerp_.*end.*float", id="lerp_-number-end"),
        pytest.param(lambda x: x.multiply_([1.0]), "mul_.*list", id="multiply_-list"),
        pytest.param(lambda x: x.heaviside_(0.5), "heaviside_.*values.*float", id="heaviside_"),
        pytest.param(lambda x: x.ldexp_(2), "ldexp_.*other.*int", id="ldexp_-number"),
        pytest.param(lambda x: x.nextafter_(2.0), "nextafter_.*other.*float", id="nextafter_"),
    ],
)
def test_wrong_argument_types_raise_a_type_error_naming_the_argument(call, named):
    x = kael.ones(3)
    with pytest.raises(kael.TypeError, match=named):
        call(x)
    assert x.tolist() == [1.0, 1.0, 1.0] and version(x) == 0
    with pytest.raises(TypeError):
        call(torch.ones(3))


def test_gcd_in_place_takes_a_tensor_only():
    x = kael.tensor([4, 6])
    with pytest.raises(kael.TypeError, match=r"gcd_.*other.*int"):
        x.gcd_(3)
    assert x.tolist() == [4, 6] and version(x) == 0
    with pytest.raises(TypeError):
        torch.tensor([4, 6]).gcd_(3)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float16, kael.int64])
def test_float_power_in_place_needs_a_float64_self(dtype):
    # float_power computes in float64: a self of another dtype cannot hold its result
    x = kael.tensor([1.0, 2.0]).to(dtype)
    with pytest.raises(kael.TypeError, match=rf"float_power_ has dtype {dtype}.*float64"):
        x.float_power_(2)
    assert version(x) == 0
    with pytest.raises(RuntimeError, match="requires dtype Double"):
        torch.tensor([1.0, 2.0]).float_power_(2)
