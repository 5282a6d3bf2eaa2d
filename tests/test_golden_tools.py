"""The golden pipeline's own tools, proven to fail when they should: the comparison (values,
dtype, shape, tolerances, NaN, infinities), the registry (a missing op fails loudly), the
manifest and args round trip, the views, the data budget, the book's overrides of PyTorch and
the generator's byte-for-byte reproducibility."""

import math

import golden_ops
import golden_tools as gt
import numpy as np
import pytest
import torch

import kael

INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)
# The book's int64 of NaN, inf, -inf, 0, -0, 1, -1, 1e-10, 1000, -1000.
SPECIAL_AS_INT64 = [0, INT64_MAX, INT64_MIN, 0, 0, 1, -1, 0, 1000, -1000]
CASES = gt.read_manifest()
BY_ID = {c.id: c for c in CASES}


def case_in(root, op: str, name: str, inputs: dict, args: str = "", outputs=None, error=None):
    """A case written by hand under root: inputs saved as given, outputs saved when given."""
    case = gt.Case(op, name, tuple(inputs), {k: "none" for k in inputs}, args, 1, error)
    (root / op).mkdir(parents=True, exist_ok=True)
    for key, array in inputs.items():
        np.save(case.input_path(key, root), array)
    if outputs is not None:
        np.save(case.output_paths(root)[0], outputs)
    return case


# ---- the comparison --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "array",
    [
        np.array([[1.5, -2.0], [0.0, 3.25]], np.float32),
        np.array([1e300, -1e-300], np.float64),
        np.array([INT64_MIN, 0, INT64_MAX], np.int64),
        np.array([True, False]),
        np.array(2.5, np.float32),
        np.zeros((0, 3), np.float64),
    ],
    ids=["f32", "f64", "i64", "bool", "zero_d", "empty"],
)
def test_mismatch_accepts_identical_arrays_of_every_dtype_and_shape(array) -> None:
    assert gt.mismatch(array.copy(), array) is None


def test_mismatch_names_the_first_wrong_index_and_both_values() -> None:
    expected = np.arange(12, dtype=np.float32).reshape(3, 4)
    actual = expected.copy()
    actual[1, 2], actual[2, 0] = 99.0, 77.0
    message = gt.mismatch(actual, expected)
    assert "2 of 12 elements differ" in message
    assert "index [1, 2]" in message and "99.0" in message and "6.0" in message


def test_mismatch_rejects_a_wrong_dtype_with_equal_values() -> None:
    expected = np.array([1.0, 2.0], np.float32)
    assert "dtype float64 != expected float32" in gt.mismatch(expected.astype(np.float64), expected)
    assert "dtype" in gt.mismatch(np.array([1, 2]), expected)
    assert "dtype" in gt.mismatch(np.array([1, 0], np.int64), np.array([True, False]))


@pytest.mark.parametrize(
    "actual_shape, expected_shape", [((3,), (1, 3)), ((), (1,)), ((0, 2), (2, 0)), ((2, 3), (3, 2))]
)
def test_mismatch_rejects_a_wrong_shape(actual_shape, expected_shape) -> None:
    actual, expected = np.zeros(actual_shape, np.float32), np.zeros(expected_shape, np.float32)
    assert "shape" in gt.mismatch(actual, expected)


@pytest.mark.parametrize(
    "dtype, expected, inside, outside",
    [
        (np.float32, 1.0, 1.0 + 1.0e-5, 1.0 + 1.2e-5),  # atol 1e-6 + rtol 1e-5 * 1
        (np.float32, 0.0, 9e-7, 1.1e-6),  # atol alone near zero
        (np.float32, 1000.0, 1000.0 + 0.0095, 1000.0 + 0.0105),  # 1e-6 + 1e-5 * 1000
        (np.float64, 1.0, 1.0 + 9e-13, 1.0 + 2e-12),  # atol 1e-14 + rtol 1e-12 * 1
        (np.float64, 0.0, 5e-15, 2e-14),
    ],
)
def test_float_tolerance_holds_on_both_sides_of_the_limit(dtype, expected, inside, outside) -> None:
    e = np.array([expected, -expected], dtype)
    assert gt.mismatch(np.array([inside, -inside], dtype), e) is None
    assert gt.mismatch(np.array([outside, -outside], dtype), e) is not None


# ---- bfloat16: stored as a structured array of float32 values -----------------------------------

BF16_STEP = 2.0**-7  # one bfloat16 step at 1.0 (8 bits of significand)


def bf16(values) -> np.ndarray:
    array = np.empty(np.shape(values), gt.BFLOAT16)
    array["bfloat16"] = values
    return array


@pytest.mark.parametrize("at", [1.0, -64.0, 2.0**20])
def test_bfloat16_tolerance_holds_on_both_sides_of_the_limit(at) -> None:
    # two steps at the bottom of a binade (rtol 2**-6): one step off passes, three fail
    step = abs(at) * BF16_STEP
    assert gt.mismatch(bf16([at + step]), bf16([at])) is None
    assert gt.mismatch(bf16([at - 2 * step]), bf16([at])) is None
    assert "differ" in gt.mismatch(bf16([at + 3 * step]), bf16([at]))
    assert "differ" in gt.mismatch(bf16([at - 3 * step]), bf16([at]))


def test_bfloat16_compares_nan_and_infinities_like_the_other_floats() -> None:
    special = bf16([np.nan, np.inf, -np.inf, 0.0])
    assert gt.mismatch(special.copy(), special) is None
    assert gt.mismatch(bf16([0.0, np.inf, -np.inf, 0.0]), special) is not None
    assert gt.mismatch(bf16([np.nan, -np.inf, -np.inf, 0.0]), special) is not None


def test_a_float32_array_never_matches_a_bfloat16_one() -> None:
    values = np.array([1.0, 2.5], np.float32)
    assert gt.mismatch(values, bf16(values)) == "dtype float32 != expected bfloat16"
    assert gt.mismatch(bf16(values), values) == "dtype bfloat16 != expected float32"


@pytest.mark.parametrize("lib", [torch, kael], ids=["torch", "kael"])
@pytest.mark.parametrize("shape", [(2, 3), (), (0, 4)], ids=str)
def test_bfloat16_round_trips_through_a_structured_array(lib, shape) -> None:
    values = np.linspace(-3.0, 5.0, math.prod(shape), dtype=np.float32).reshape(shape)
    t = lib.from_numpy(values).to(lib.bfloat16)
    array = gt.to_array(t)
    assert array.dtype == gt.BFLOAT16 and array.shape == shape
    assert array["bfloat16"].tolist() == t.float().tolist()  # each bfloat16 is a float32
    back = gt.from_array(array, lib)
    assert back.dtype == lib.bfloat16 and tuple(back.shape) == shape
    assert back.float().tolist() == t.float().tolist()


def test_bfloat16_inputs_load_as_bfloat16_through_their_view(tmp_path) -> None:
    case = case_in(tmp_path, "neg", "t", {"x": bf16(np.arange(6.0).reshape(2, 3))})
    case = gt.Case(case.op, case.name, case.inputs, {"x": "transpose:0:1"})
    for lib in (torch, kael):
        (x,) = gt.load_inputs(case, lib, tmp_path).values()
        assert x.dtype == lib.bfloat16 and tuple(x.shape) == (3, 2)
        assert x.float().tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]


def test_the_generator_stores_bfloat16_bases_and_outputs_structured() -> None:
    case = BY_ID["add/bfloat16"]
    assert np.load(case.input_path("a")).dtype == gt.BFLOAT16
    (out,) = gt.load_expected(case)
    assert out.dtype == gt.BFLOAT16 and out.shape == (3, 4)
    gt.check_case(case, kael)


def test_integers_and_bools_compare_exactly() -> None:
    big = np.array([INT64_MAX], np.int64)
    assert gt.mismatch(big - 1, big) is not None
    assert gt.mismatch(np.array([True, False]), np.array([True, True])) is not None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_matches_only_nan(dtype) -> None:
    nan = np.array([np.nan], dtype)
    assert gt.mismatch(nan.copy(), nan) is None
    assert gt.mismatch(np.array([0.0], dtype), nan) is not None
    assert gt.mismatch(nan, np.array([0.0], dtype)) is not None
    assert gt.mismatch(np.array([np.inf], dtype), nan) is not None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_infinities_match_by_sign_and_never_a_finite_value(dtype) -> None:
    inf = np.array([np.inf, -np.inf], dtype)
    assert gt.mismatch(inf.copy(), inf) is None
    assert gt.mismatch(-inf, inf) is not None
    huge = np.finfo(dtype).max
    assert gt.mismatch(np.array([huge, -huge], dtype), inf) is not None
    assert gt.mismatch(inf, np.array([huge, -huge], dtype)) is not None


def test_assert_matches_checks_the_number_of_outputs_and_each_one() -> None:
    values, indices = np.array([1.0], np.float32), np.array([0])
    gt.assert_matches((torch.tensor([1.0]), torch.tensor([0])), [values, indices])
    with pytest.raises(AssertionError, match="returned 1 outputs, expected 2"):
        gt.assert_matches(torch.tensor([1.0]), [values, indices])
    with pytest.raises(AssertionError, match="output 1: .*index \\[0\\]"):
        gt.assert_matches((torch.tensor([1.0]), torch.tensor([1])), [values, indices])


def test_results_keep_zero_d_shape_and_python_bools_become_bool_arrays() -> None:
    (scalar,) = gt.as_arrays(kael.tensor(1.5))
    assert scalar.shape == () and scalar.dtype == np.float32
    (flag,) = gt.as_arrays(True)
    assert flag.shape == () and flag.dtype == np.bool_
    (transposed,) = gt.as_arrays(kael.tensor([[1, 2], [3, 4]]).T)
    assert transposed.flags.c_contiguous and transposed.tolist() == [[1, 3], [2, 4]]


# ---- the registry and running a case -----------------------------------------------------------


def test_every_manifest_op_has_a_registry_entry() -> None:
    missing = sorted({c.op for c in CASES} - set(golden_ops.REGISTRY))
    assert not missing, f"manifest ops without a registry entry: {missing}"


def test_a_case_of_an_unregistered_op_fails_loudly(tmp_path) -> None:
    case = case_in(tmp_path, "frobnicate", "x", {"x": np.ones(2, np.float32)}, outputs=np.ones(2))
    with pytest.raises(KeyError, match="no golden op registered for 'frobnicate'"):
        gt.check_case(case, kael, tmp_path)


def test_a_registered_op_that_kael_lacks_fails_naming_it() -> None:
    with pytest.raises(AttributeError, match="has no op 'frobnicate'"):
        golden_ops.resolve(kael, "frobnicate")


def test_check_case_fails_a_wrong_value_and_passes_the_right_one(tmp_path) -> None:
    a, b = np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)
    good = case_in(tmp_path, "add", "good", {"a": a, "b": b}, outputs=a + b)
    gt.check_case(good, kael, tmp_path)
    bad = case_in(tmp_path, "add", "bad", {"a": a, "b": b}, outputs=np.float32([4.0, 7.0]))
    with pytest.raises(AssertionError, match="index \\[1\\]: actual np.float32\\(6.0\\)"):
        gt.check_case(bad, kael, tmp_path)


def test_check_case_fails_when_kael_does_not_raise_or_raises_another_type(tmp_path) -> None:
    x = {"x": np.ones((2, 3), np.float32)}
    quiet = case_in(tmp_path, "neg", "quiet", x, error="RuntimeError")
    with pytest.raises(AssertionError, match="expected Error .*got none"):
        gt.check_case(quiet, kael, tmp_path)
    wrong = case_in(tmp_path, "select", "wrong", x, "dim:0,index:5", error="TypeError")
    with pytest.raises(AssertionError, match="expected TypeError .*got IndexError"):
        gt.check_case(wrong, kael, tmp_path)
    right = case_in(tmp_path, "select", "right", x, "dim:0,index:5", error="IndexError")
    gt.check_case(right, kael, tmp_path)


def test_every_recorded_error_type_maps_to_a_kael_error() -> None:
    for name in {c.error for c in CASES if c.error}:
        assert issubclass(gt.error_class(name, kael), kael.Error), name


# ---- manifest lines and args ---------------------------------------------------------------------


def test_manifest_lines_round_trip() -> None:
    case = gt.Case("sum", "keepdim_two", ("x",), {"x": "transpose:0:1"}, "dim:1/2,keepdim:True")
    line = case.to_line()
    assert line == (
        "op=sum case=keepdim_two inputs=x view_x=transpose:0:1 args=dim:1/2,keepdim:True outputs=1"
    )
    assert gt.Case.from_line(line) == case
    error = gt.Case("add", "bad", ("a", "b"), {"a": "none", "b": "none"}, "", 0, "RuntimeError")
    assert gt.Case.from_line(error.to_line()) == error


def test_a_manifest_line_without_a_required_field_is_refused() -> None:
    with pytest.raises(ValueError, match="lacks outputs"):
        gt.Case.from_line("op=add case=x inputs=a view_a=none args=")
    with pytest.raises(ValueError, match="has no '='"):
        gt.Case.from_line("op=add case")


def test_a_manifest_repeating_a_case_is_refused(tmp_path) -> None:
    line = gt.Case("add", "x").to_line()
    (tmp_path / "manifest.txt").write_text(f"{line}\n{line}\n")
    with pytest.raises(ValueError, match="repeats the case add/x"):
        gt.read_manifest(tmp_path / "manifest.txt")


@pytest.mark.parametrize(
    "args",
    [
        {"dim": (0, 2), "keepdim": True},
        {"dim": (1,), "correction": 0},
        {"other": 2.5, "flag": False, "none": None},
        {"min": -math.inf, "max": math.inf, "tiny": 1e-10, "whole": 2.0, "big": -1000},
        {"dtype": "int64", "approximate": "tanh", "empty": ()},
    ],
)
def test_args_round_trip_with_their_python_types(args) -> None:
    decoded = gt.decode_args(gt.encode_args(args))
    assert decoded == args
    assert [type(v) for v in decoded.values()] == [type(v) for v in args.values()]


def test_nan_args_round_trip_and_bad_text_is_refused() -> None:
    assert math.isnan(gt.decode_args(gt.encode_args({"value": math.nan}))["value"])
    with pytest.raises(ValueError, match="cannot be written"):
        gt.encode_args({"name": "a,b"})
    with pytest.raises(ValueError, match="not key:value"):
        gt.decode_args("dim")


# ---- views -------------------------------------------------------------------------------------

VIEWS = [
    ("transpose:0:1", (4, 3)),
    ("permute:1:2:0", (3, 4, 2)),
    ("slice:2:1:4:2", (2, 3, 2)),
    ("slice:0:1:2:1", (1, 3, 4)),
    ("expand:2:2:3:4", (2, 2, 3, 4)),
    ("transpose:0:2+slice:0:0:4:3", (2, 3, 2)),
    ("unsqueeze:1", (2, 1, 3, 4)),
    ("none", (2, 3, 4)),
]


@pytest.mark.parametrize("view, shape", VIEWS)
def test_kael_applies_each_view_like_torch_without_copying(view, shape) -> None:
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    if view.startswith("transpose:0:1"):
        base = base[0]
    k = gt.apply_view(kael.from_numpy(base.copy()), view)
    t = gt.apply_view(torch.from_numpy(base.copy()), view)
    assert k.shape == tuple(t.shape) == shape
    assert k.strides() == t.stride()
    assert k.numpy().tolist() == t.numpy().tolist()


def test_an_unknown_view_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown view 'flip:0'"):
        gt.apply_view(kael.zeros(2), "flip:0")


def test_load_inputs_reads_the_base_and_applies_the_view(tmp_path) -> None:
    base = np.arange(6, dtype=np.int64).reshape(2, 3)
    case = case_in(tmp_path, "neg", "t", {"x": base})
    case = gt.Case(case.op, case.name, case.inputs, {"x": "transpose:0:1"})
    (x,) = gt.load_inputs(case, kael, tmp_path).values()
    assert x.shape == (3, 2) and not x.is_contiguous() and x.dtype is kael.int64
    assert x.tolist() == base.T.tolist()


def test_a_missing_data_file_fails_naming_it(tmp_path) -> None:
    case = gt.Case("neg", "lost", ("x",), {"x": "none"})
    with pytest.raises(FileNotFoundError, match="lost_x.npy"):
        gt.check_case(case, kael, tmp_path)
    present = case_in(tmp_path, "neg", "no_output", {"x": np.ones(2, np.float32)})
    with pytest.raises(FileNotFoundError, match="no_output_out.npy"):
        gt.check_case(present, kael, tmp_path)


# ---- the committed data --------------------------------------------------------------------------


def test_golden_data_has_enough_cases_and_ops_and_fits_the_budget() -> None:
    ops = {c.op for c in CASES}
    assert len(CASES) >= 3600 and len(ops) >= 270, (len(CASES), len(ops))
    total = sum(p.stat().st_size for p in gt.GOLDEN_DIR.rglob("*") if p.is_file())
    assert total < 20 * 2**20, f"golden data is {total} bytes"


def test_every_data_file_belongs_to_a_case_and_every_case_has_its_files() -> None:
    wanted = set()
    for case in CASES:
        wanted |= {case.input_path(n) for n in case.inputs}
        wanted |= set(case.output_paths()) if not case.error else set()
    present = set(gt.GOLDEN_DIR.rglob("*.npy"))
    assert not wanted - present, sorted(wanted - present)[:5]
    assert not present - wanted, sorted(present - wanted)[:5]


def test_the_pattern_families_of_the_chapter_are_in_the_data() -> None:
    for case_id in (
        "add/transposed", "add/special_float32", "mul/int64_and_zero_d_float32", "sub/bool_and_bool",
        "sqrt/special_float64", "add_/stepped_self", "masked_fill/wider_mask",
        "pow/i64_negative_exponent", "conv2d/groups", "max_pool2d/indices",
        "batch_norm/training", "interpolate/bicubic", "to/special_bfloat16_to_float16",
    ):  # fmt: skip
        assert case_id in BY_ID, case_id
    special = gt.load_inputs(BY_ID["add/special_float32"], torch)
    assert special["a"].shape == (10, 1) and special["b"].shape == (1, 10)
    assert BY_ID["sub/bool_and_bool"].error == "RuntimeError"
    # batch_norm gives back its running statistics; max_pool with indices two outputs
    assert BY_ID["batch_norm/training"].outputs == 3
    assert BY_ID["max_pool2d/indices"].outputs == 2


def test_each_case_is_seeded_by_its_own_name() -> None:
    same_spec_a = np.load(BY_ID["mul/same_shape"].input_path("a"))
    same_spec_b = np.load(BY_ID["sub/same_shape"].input_path("a"))
    assert not np.array_equal(same_spec_a, same_spec_b)


# ---- where the book overrides PyTorch (API.md, last section) ------------------------------------


def test_book_add_of_two_bools_counts_in_int64() -> None:
    case = BY_ID["add/bool_and_bool"]
    assert case.note == "book_bool_add"
    a, b = (np.load(case.input_path(n)) for n in ("a", "b"))
    (out,) = gt.load_expected(case)
    assert out.dtype == np.int64
    assert out.tolist() == (a.astype(np.int64) + b.astype(np.int64)).tolist()
    assert out.max() == 2  # PyTorch's logical or would stop at True


@pytest.mark.parametrize("case_id", ["to/special_float32_to_int64", "to/special_float64_to_int64"])
def test_book_float_to_int64_saturates_and_maps_nan_to_zero(case_id) -> None:
    case = BY_ID[case_id]
    assert case.note == "book_float_to_int64"
    (out,) = gt.load_expected(case)
    assert out.tolist() == SPECIAL_AS_INT64


def test_book_float_to_int64_saturates_past_the_int64_range() -> None:
    (out,) = gt.load_expected(BY_ID["to/huge_float64_to_int64"])
    assert out.tolist() == [INT64_MAX, INT64_MIN, 2**62, INT64_MIN]


def test_book_copy_of_floats_into_int64_saturates_too() -> None:
    case = BY_ID["copy_/special_to_int64"]
    assert case.note == "book_float_to_int64"
    assert gt.load_expected(case)[0].tolist() == SPECIAL_AS_INT64


def test_book_integer_arange_counts_from_the_untruncated_values() -> None:
    case = BY_ID["arange/integer_dtype_fractional"]
    assert case.note == "book_arange_integer_dtype"
    assert gt.decode_args(case.args) == {"start": 0.5, "end": 3.5, "step": 1.5, "dtype": "int64"}
    (out,) = gt.load_expected(case)
    assert out.dtype == np.int64 and out.tolist() == [0, 1]  # PyTorch 2.13: [0, 1, 2]
