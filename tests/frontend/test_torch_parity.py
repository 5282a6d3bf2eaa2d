"""PyTorch call-form parity: issue 4's ops called the ways people call them in PyTorch
(positional and keyword dims, methods, operators, namedtuple fields, kael.nn.functional)
run on kael and on torch from one table, and must give the same values, dtype and shape."""

import numpy as np
import pytest
import torch
from parity_helpers import same

import kael

GEN = np.random.default_rng(4)
# name -> the NumPy array both libraries start from (a fresh copy for each call).
INPUTS = {
    "x": GEN.standard_normal((3, 4)).astype(np.float32),
    "x64": GEN.standard_normal((3, 4)),
    "y": GEN.standard_normal((4, 5)).astype(np.float32),
    "b": GEN.standard_normal((2, 3, 4)).astype(np.float32),
    "c": GEN.standard_normal((2, 4, 5)).astype(np.float32),
    "v": GEN.standard_normal(4).astype(np.float32),
    "w": GEN.standard_normal(3).astype(np.float32),
    "n": GEN.integers(-5, 6, (3, 4)),
    "m": GEN.standard_normal((3, 4)) > 0,
    "idx": np.array([2, 0, 2]),
    "g": GEN.integers(0, 4, (3, 2)),
    "g0": GEN.integers(0, 3, (2, 4)),
    "tgt": np.array([1, 0, 3]),
    "s": np.array(2.5, dtype=np.float32),
    "e": np.zeros((0, 4), dtype=np.float32),
}


def inputs(lib, names: str):
    """Fresh tensors of `lib` (kael or torch) for the space-separated input names."""
    make = kael.from_numpy if lib is kael else torch.from_numpy
    return [make(INPUTS[n].copy()) for n in names.split()]


# (id, input names, call): the call runs as call(L, *inputs) with L kael or torch.
CALLS = [
    # reductions
    ("sum_all_method", "x", lambda L, x: x.sum()),
    ("sum_positional_dim", "x", lambda L, x: x.sum(0)),
    ("sum_keyword_dim_keepdim", "x", lambda L, x: x.sum(dim=1, keepdim=True)),
    ("sum_tuple_dims_function", "b", lambda L, x: L.sum(x, (0, 1))),
    ("sum_list_dims_keyword", "b", lambda L, x: L.sum(x, dim=[0, 2])),
    ("sum_positional_keepdim", "x", lambda L, x: x.sum(1, True)),
    ("sum_dtype_keyword", "n", lambda L, x: x.sum(dtype=L.float64)),
    ("sum_of_transpose", "x", lambda L, x: x.T.sum()),
    ("sum_of_transpose_dim", "x", lambda L, x: x.T.sum(0)),
    ("sum_of_bool", "m", lambda L, x: x.sum()),
    ("prod_positional_dim", "x", lambda L, x: x.prod(1)),
    ("prod_keepdim_dtype", "n", lambda L, x: L.prod(x, 0, keepdim=True, dtype=L.float32)),
    ("mean_all", "x", lambda L, x: x.mean()),
    ("mean_dtype", "x", lambda L, x: x.mean(dtype=L.float64)),
    ("mean_int_with_dtype", "n", lambda L, x: x.mean(dtype=L.float32)),
    ("mean_tuple_keepdim", "b", lambda L, x: x.mean((1, 2), keepdim=True)),
    ("mean_negative_dim", "x", lambda L, x: L.mean(x, -1)),
    ("var_all", "x", lambda L, x: x.var()),
    ("var_positional_dim", "x", lambda L, x: x.var(0)),
    ("var_correction_0", "x", lambda L, x: x.var(1, correction=0)),
    ("var_unbiased_false_keyword", "x", lambda L, x: x.var(unbiased=False)),
    ("var_dim_unbiased_positional", "x", lambda L, x: x.var(1, False)),
    ("var_dim_unbiased_keepdim_positional", "x", lambda L, x: x.var(0, True, True)),
    ("std_all", "x", lambda L, x: x.std()),
    ("std_unbiased_false", "x", lambda L, x: x.std(unbiased=False)),
    ("std_dim_unbiased_keyword", "x", lambda L, x: L.std(x, dim=1, unbiased=False)),
    ("std_keepdim_keyword", "x", lambda L, x: x.std(dim=0, keepdim=True)),
    ("std_correction_2", "x", lambda L, x: L.std(x, 1, correction=2)),
    ("var_unbiased_as_second_positional", "x", lambda L, x: L.var(x, False)),
    ("std_tuple_dim_unbiased_keepdim", "b", lambda L, x: x.std((0, 2), True, True)),
    ("flip_keyword_dims", "x", lambda L, x: x.flip(dims=[1])),
    ("max_all", "x", lambda L, x: x.max()),
    ("max_dim_values", "x", lambda L, x: x.max(dim=1).values),
    ("max_dim_indices_subscript", "x", lambda L, x: x.max(1)[1]),
    ("max_dim_unpacked", "x", lambda L, x: tuple(L.max(x, 0, keepdim=True))),
    ("max_dim_keepdim_positional", "x", lambda L, x: x.max(1, True).indices),
    ("max_of_two_tensors", "x x64", lambda L, x, y: L.max(x.double(), y)),
    ("min_dim_indices", "x", lambda L, x: x.min(dim=0).indices),
    ("min_all_int", "n", lambda L, x: x.min()),
    ("amax_all", "x", lambda L, x: x.amax()),
    ("amax_tuple", "b", lambda L, x: x.amax((0, 2))),
    ("amin_keyword", "b", lambda L, x: L.amin(x, dim=-1, keepdim=True)),
    ("argmax_all", "x", lambda L, x: x.argmax()),
    ("argmax_dim", "x", lambda L, x: x.argmax(1)),
    ("argmax_dim_keepdim", "x", lambda L, x: L.argmax(x, dim=0, keepdim=True)),
    ("argmin_all_int", "n", lambda L, x: x.argmin()),
    ("argmin_dim_keyword", "x", lambda L, x: L.argmin(x, dim=-1)),
    ("all_method", "m", lambda L, x: x.all()),
    ("all_dim", "m", lambda L, x: x.all(1)),
    ("any_dim_keepdim", "m", lambda L, x: L.any(x, dim=0, keepdim=True)),
    ("any_of_float", "x", lambda L, x: x.any()),
    ("norm_method", "x", lambda L, x: x.norm()),
    ("norm_dim_keyword", "x", lambda L, x: x.norm(dim=1)),
    ("norm_p_positional", "x", lambda L, x: x.norm(1)),
    ("norm_p_dim_positional", "x", lambda L, x: L.norm(x, 3, 1)),
    ("norm_fro", "x", lambda L, x: L.norm(x, "fro")),
    ("norm_inf_keepdim", "x", lambda L, x: x.norm(float("inf"), dim=0, keepdim=True)),
    ("norm_p_keyword", "x", lambda L, x: x.norm(p=1, dim=0)),
    ("logsumexp_method", "x", lambda L, x: x.logsumexp(1)),
    ("logsumexp_keyword", "b", lambda L, x: L.logsumexp(x, dim=(0, 2), keepdim=True)),
    ("count_nonzero_all", "n", lambda L, x: x.count_nonzero()),
    ("count_nonzero_dim", "n", lambda L, x: L.count_nonzero(x, dim=0)),
    ("count_nonzero_positional_dim", "n", lambda L, x: x.count_nonzero(1)),
    # matmul family
    ("matmul_operator", "x y", lambda L, a, b: a @ b),
    ("rmatmul_method", "x y", lambda L, a, b: b.__rmatmul__(a)),
    ("matmul_method", "x y", lambda L, a, b: a.matmul(b)),
    ("matmul_function", "b c", lambda L, a, b: L.matmul(a, b)),
    ("matmul_matrix_vector", "x v", lambda L, a, b: a @ b),
    ("matmul_vector_matrix", "v y", lambda L, a, b: a @ b),
    ("matmul_batch_broadcast", "b y", lambda L, a, b: a @ b),
    ("matmul_of_transposes", "x y", lambda L, a, b: b.T @ a.T),
    ("mm_method", "x y", lambda L, a, b: a.mm(b)),
    ("mm_function", "x y", lambda L, a, b: L.mm(a, b)),
    ("bmm_method", "b c", lambda L, a, b: a.bmm(b)),
    ("dot_method", "v v", lambda L, a, b: a.dot(b)),
    ("dot_function", "v v", lambda L, a, b: L.dot(a, b)),
    ("outer_method", "w v", lambda L, a, b: a.outer(b)),
    ("outer_function", "w v", lambda L, a, b: L.outer(a, b)),
    ("matmul_int", "n", lambda L, a: a @ a.T),
    # joining and selecting
    ("cat_tuple_positional_dim", "x x", lambda L, a, b: L.cat((a, b), 1)),
    ("cat_list_keyword_dim", "x x", lambda L, a, b: L.cat([a, b], dim=0)),
    ("cat_negative_dim", "x x", lambda L, a, b: L.cat([a, b], -1)),
    ("cat_mixed_dtypes", "x n", lambda L, a, b: L.cat([a, b])),
    ("cat_skips_legacy_empty", "x", lambda L, a: L.cat([a, L.zeros(0)])),
    ("stack_keyword_negative_dim", "x x", lambda L, a, b: L.stack([a, b], dim=-1)),
    ("stack_tuple_default", "x x", lambda L, a, b: L.stack((a, b))),
    ("where_three_tensors", "m x n", lambda L, c, a, b: L.where(c, a, b)),
    ("where_scalar_other", "m x", lambda L, c, a: L.where(c, a, 0.0)),
    ("where_method", "x m x64", lambda L, a, c, b: a.where(c, b)),
    ("masked_fill_method", "x m", lambda L, a, c: a.masked_fill(c, 0.5)),
    ("masked_fill_function", "x m", lambda L, a, c: L.masked_fill(a, c, -1)),
    ("masked_fill_0d_value", "x m s", lambda L, a, c, s: a.masked_fill(c, s)),
    ("index_select_method", "x idx", lambda L, a, i: a.index_select(0, i)),
    ("index_select_keyword", "x idx", lambda L, a, i: L.index_select(a, dim=1, index=i)),
    ("gather_method", "x g", lambda L, a, i: a.gather(1, i)),
    ("gather_keyword", "x g0", lambda L, a, i: L.gather(a, dim=0, index=i)),
    ("take_along_dim_method", "x g", lambda L, a, i: a.take_along_dim(i, dim=1)),
    ("take_along_dim_flat", "x idx", lambda L, a, i: L.take_along_dim(a, i)),
    ("take_along_dim_argsort", "x", lambda L, a: L.take_along_dim(a, a.argsort(1), 1)),
    ("scatter_add_function", "x g x", lambda L, a, i, s: L.scatter_add(a, 1, i, s)),
    ("scatter_add_method", "x g x", lambda L, a, i, s: a.scatter_add(1, i, s)),
    ("scatter_add_inplace", "x g0 x", lambda L, a, i, s: a.scatter_add_(0, i, s)),
    ("index_add_inplace", "x idx x", lambda L, a, i, s: a.index_add_(0, i, s)),
    ("index_add_alpha", "x idx x", lambda L, a, i, s: a.index_add_(0, i, s, alpha=2)),
    ("index_add_function", "x idx x", lambda L, a, i, s: L.index_add(a, 0, i, s)),
    ("index_add_method", "x idx x", lambda L, a, i, s: a.index_add(0, i, s)),
    ("nonzero_method", "m", lambda L, a: a.nonzero()),
    ("nonzero_as_tuple", "m", lambda L, a: L.nonzero(a, as_tuple=True)),
    ("index_by_bool_mask", "x m", lambda L, a, c: a[c]),
    ("index_by_int_tensor", "x idx", lambda L, a, i: a[i]),
    ("index_by_two_int_tensors", "x idx", lambda L, a, i: a[i, i]),
    ("index_slice_and_tensor", "x idx", lambda L, a, i: a[:, i]),
    ("index_by_list", "x", lambda L, a: a[[0, 2]]),
    ("index_put_by_mask", "x m", lambda L, a, c: a.__setitem__(c, 0.0) or a),
    ("index_put_by_tensor", "x idx", lambda L, a, i: a.__setitem__(i, 1.0) or a),
    # sequences
    ("cumsum_method", "x", lambda L, a: a.cumsum(0)),
    ("cumsum_keyword", "x", lambda L, a: L.cumsum(a, dim=1)),
    ("cumsum_dtype", "n", lambda L, a: a.cumsum(1, dtype=L.float32)),
    ("cumsum_of_bool", "m", lambda L, a: a.cumsum(-1)),
    ("cumprod_method", "x", lambda L, a: a.cumprod(1)),
    ("cumprod_keyword", "n", lambda L, a: L.cumprod(a, dim=0)),
    ("cumsum_inplace", "x", lambda L, a: a.cumsum_(0)),
    ("sort_method", "x", lambda L, a: a.sort()),
    ("sort_values_field", "x", lambda L, a: a.sort(dim=0).values),
    ("sort_descending_positional", "x", lambda L, a: L.sort(a, 1, True)),
    ("sort_stable_keyword", "n", lambda L, a: L.sort(a, stable=True, descending=True)),
    ("argsort_method", "n", lambda L, a: a.argsort(stable=True)),
    ("argsort_dim_descending", "n", lambda L, a: L.argsort(a, dim=0, descending=True, stable=True)),
    ("topk_method", "x", lambda L, a: a.topk(3)),
    ("topk_smallest", "x", lambda L, a: a.topk(3, largest=False)),
    ("topk_dim_positional", "x", lambda L, a: L.topk(a, 2, 0)),
    ("topk_indices_field", "x", lambda L, a: a.topk(2, dim=1).indices),
    ("tril_method", "x", lambda L, a: a.tril()),
    ("tril_diagonal", "x", lambda L, a: L.tril(a, -1)),
    ("triu_diagonal_keyword", "x", lambda L, a: a.triu(diagonal=1)),
    ("tril_inplace", "x", lambda L, a: a.tril_(1)),
    ("flip_int", "x", lambda L, a: a.flip(0)),
    ("flip_tuple", "x", lambda L, a: a.flip((0, 1))),
    ("flip_varargs", "x", lambda L, a: a.flip(0, 1)),
    ("flip_function_list", "b", lambda L, a: L.flip(a, [0, 2])),
    ("roll_positional", "x", lambda L, a: a.roll(1, 0)),
    ("roll_flat", "x", lambda L, a: a.roll(5)),
    ("roll_keywords", "x", lambda L, a: L.roll(a, shifts=(1, -1), dims=(0, 1))),
    # softmax family
    ("softmax_method", "x", lambda L, a: a.softmax(-1)),
    ("softmax_function_keyword", "x", lambda L, a: L.softmax(a, dim=0)),
    ("softmax_functional", "x", lambda L, a: L.nn.functional.softmax(a, dim=-1)),
    ("softmax_dtype", "x", lambda L, a: L.softmax(a, 1, dtype=L.float64)),
    ("log_softmax_method", "x", lambda L, a: a.log_softmax(dim=1)),
    ("log_softmax_functional", "b", lambda L, a: L.nn.functional.log_softmax(a, dim=1)),
    ("cross_entropy_functional", "x tgt", lambda L, a, t: L.nn.functional.cross_entropy(a, t)),
    (
        "cross_entropy_sum",
        "x tgt",
        lambda L, a, t: L.nn.functional.cross_entropy(a, t, reduction="sum"),
    ),
    (
        "cross_entropy_weight_positional",
        "x tgt v",
        lambda L, a, t, w: L.nn.functional.cross_entropy(a, t, w.abs()),
    ),
    (
        "cross_entropy_ignore_index",
        "x tgt",
        lambda L, a, t: L.nn.functional.cross_entropy(a, t, ignore_index=0, reduction="none"),
    ),
    ("layer_norm_functional", "x", lambda L, a: L.nn.functional.layer_norm(a, (4,))),
    (
        "layer_norm_affine_keywords",
        "x v v",
        lambda L, a, w, b: L.nn.functional.layer_norm(a, [4], weight=w, bias=b, eps=1e-3),
    ),
    ("layer_norm_kael_name", "x", lambda L, a: L.layer_norm(a, [4])),
    # every argument by torch's keyword name
    ("sum_all_keywords", "x", lambda L, x: L.sum(input=x, dim=0, keepdim=True)),
    ("mean_all_keywords", "x", lambda L, x: L.mean(input=x, dim=1, dtype=L.float64)),
    ("var_all_keywords", "x", lambda L, x: L.var(input=x, dim=1, unbiased=False, keepdim=True)),
    ("std_all_keywords", "x", lambda L, x: L.std(input=x, dim=0, correction=0)),
    ("max_all_keywords", "x", lambda L, x: tuple(L.max(input=x, dim=1, keepdim=False))),
    ("amin_all_keywords", "x", lambda L, x: L.amin(input=x, dim=0)),
    ("argmax_all_keywords", "x", lambda L, x: L.argmax(input=x, dim=1, keepdim=True)),
    ("any_all_keywords", "m", lambda L, x: L.any(input=x, dim=0)),
    ("norm_all_keywords", "x", lambda L, x: L.norm(input=x, p=1, dim=1, keepdim=True)),
    ("count_nonzero_all_keywords", "n", lambda L, x: L.count_nonzero(input=x, dim=1)),
    ("logsumexp_all_keywords", "x", lambda L, x: L.logsumexp(input=x, dim=1, keepdim=True)),
    ("matmul_all_keywords", "x y", lambda L, a, b: L.matmul(input=a, other=b)),
    ("dot_all_keywords", "v v", lambda L, a, b: L.dot(input=a, tensor=b)),
    ("pow_all_keywords", "x", lambda L, a: L.pow(input=a, exponent=2)),
    ("pow_method_keyword", "x", lambda L, a: a.pow(exponent=3)),
    ("clamp_all_keywords", "x", lambda L, a: L.clamp(input=a, min=-0.5, max=0.5)),
    ("gelu_all_keywords", "x", lambda L, a: L.nn.functional.gelu(input=a, approximate="tanh")),
    ("equal_all_keywords", "x x", lambda L, a, b: L.tensor(L.equal(input=a, other=b))),
    (
        "allclose_all_keywords",
        "x x64",
        lambda L, a, b: L.tensor(L.allclose(input=a.double(), other=b, rtol=0.1, atol=0.0)),
    ),
    ("scalar_tensor_all_keywords", "", lambda L: L.scalar_tensor(s=2.5)),
    ("zeros_like_all_keywords", "x", lambda L, a: L.zeros_like(input=a, dtype=L.float64)),
    ("mm_all_keywords", "x y", lambda L, a, b: L.mm(input=a, mat2=b)),
    ("outer_all_keywords", "w v", lambda L, a, b: L.outer(input=a, vec2=b)),
    ("cat_all_keywords", "x x", lambda L, a, b: L.cat(tensors=[a, b], dim=1)),
    ("where_all_keywords", "m x n", lambda L, c, a, b: L.where(condition=c, input=a, other=b)),
    ("gather_all_keywords", "x g", lambda L, a, i: L.gather(input=a, dim=1, index=i)),
    ("cumsum_all_keywords", "x", lambda L, a: L.cumsum(input=a, dim=1)),
    ("topk_all_keywords", "x", lambda L, a: L.topk(input=a, k=2, dim=0, largest=False)),
    ("sort_all_keywords", "x", lambda L, a: L.sort(input=a, dim=0, descending=True)),
    ("roll_all_keywords", "x", lambda L, a: L.roll(input=a, shifts=1, dims=1)),
    ("flip_all_keywords", "x", lambda L, a: L.flip(input=a, dims=(1,))),
    ("tril_all_keywords", "x", lambda L, a: L.tril(input=a, diagonal=1)),
    ("softmax_all_keywords", "x", lambda L, a: L.softmax(input=a, dim=1)),
    (
        "cross_entropy_all_keywords",
        "x tgt",
        lambda L, a, t: L.nn.functional.cross_entropy(input=a, target=t, reduction="none"),
    ),
    # empty and 0-d inputs called the usual ways
    ("sum_of_empty_dim", "e", lambda L, a: a.sum(0)),
    ("mean_of_empty_is_nan", "e", lambda L, a: a.mean()),
    ("amax_of_empty_kept_dim", "e", lambda L, a: a.amax(1)),
    ("softmax_of_empty", "e", lambda L, a: a.softmax(0)),
    ("cumsum_of_empty", "e", lambda L, a: a.cumsum(0)),
    ("sort_of_empty", "e", lambda L, a: a.sort(0)),
    ("matmul_of_empty", "e y", lambda L, a, b: a @ b),
    ("sum_of_0d", "s", lambda L, a: a.sum(0)),
    ("max_of_0d_dim", "s", lambda L, a: a.max(0)),
    ("argmax_of_0d", "s", lambda L, a: a.argmax()),
    ("softmax_of_0d", "s", lambda L, a: a.softmax(0)),
    ("cumsum_of_0d", "s", lambda L, a: a.cumsum(0)),
    ("topk_of_0d", "s", lambda L, a: a.topk(1)),
    ("flip_of_0d", "s", lambda L, a: a.flip(0)),
]


@pytest.mark.parametrize("names, call", [pytest.param(n, c, id=i) for i, n, c in CALLS])
def test_call_form_matches_torch(names, call):
    same(call(kael, *inputs(kael, names)), call(torch, *inputs(torch, names)))


# ---- the refusals that go with these call forms ---------------------------------------------


@pytest.mark.parametrize("op", ["var", "std"])
def test_unbiased_and_correction_together_are_refused_naming_both(op):
    x = kael.ones(3, 4)
    with pytest.raises(kael.TypeError, match=r"unbiased=False or correction=0"):
        getattr(x, op)(0, unbiased=False, correction=0)
    with pytest.raises(TypeError):  # torch refuses the same call
        getattr(torch.ones(3, 4), op)(0, unbiased=False, correction=0)


@pytest.mark.parametrize("op", ["var", "std"])
def test_unbiased_must_be_a_bool_naming_the_type(op):
    with pytest.raises(kael.TypeError, match="unbiased must be a bool, got int"):
        getattr(kael, op)(kael.ones(3), 0, 1)


@pytest.mark.parametrize("op", ["var", "std"])
def test_unbiased_given_as_dim_and_keyword_is_refused(op):
    with pytest.raises(kael.TypeError, match=r"unbiased given twice \(True and False\)"):
        getattr(kael, op)(kael.ones(3), True, unbiased=False)


@pytest.mark.parametrize("bad", [5, -1])
def test_index_select_checks_indices_even_when_no_element_is_read(bad):
    x = kael.zeros(5, 0)
    assert x.index_select(0, kael.tensor([4, 0])).shape == (2, 0)  # the last valid index
    with pytest.raises(kael.IndexError, match=f"index {bad} is out of bounds for dimension 0"):
        x.index_select(0, kael.tensor([0, bad]))
    with pytest.raises((IndexError, RuntimeError)):
        torch.zeros(5, 0).index_select(0, torch.tensor([0, bad]))


def test_where_method_refuses_a_non_bool_condition_naming_its_dtype():
    x = kael.ones(2)
    with pytest.raises(kael.TypeError, match="condition to be a bool tensor, got float32"):
        x.where(x, 0.0)


@pytest.mark.parametrize("op", ["sum", "prod", "mean"])
def test_reduction_dtype_must_be_a_kael_dtype_naming_the_value(op):
    x = kael.ones(2, 3)
    assert getattr(x, op)(dtype="float64").dtype is kael.float64  # a dtype's name is accepted
    with pytest.raises(kael.TypeError, match="expected a kael dtype, got 3"):
        getattr(x, op)(dtype=3)
