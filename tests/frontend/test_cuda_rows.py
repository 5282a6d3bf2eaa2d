"""The GPU's row kernels (codegen/ptx/rows.py) for softmax, log_softmax, softmin,
layer_norm and rms_norm against the CPU: both sides of the warp-per-row / CTA-per-row
switch and the streamed rows, vectorized and scalar rows, the half types loaded as they
are, and the layouts that keep the composed path. Small shapes: the emulated device runs
them in seconds (`pytest -m gpu`)."""

import numpy as np
import pytest

import kael
import kael.nn.functional as F
from kael.frontend.inspection import record_launches

pytestmark = pytest.mark.gpu

DEVICE = "cuda"
TOL = {kael.float32: 2e-6, kael.float64: 1e-14, kael.float16: 1e-3, kael.bfloat16: 8e-3}
HALF = [kael.float16, kael.bfloat16]


def _host(shape, dtype=kael.float32, seed: int = 0, scale: float = 3.0) -> kael.Tensor:
    values = np.random.default_rng(seed).standard_normal(shape) * scale
    return kael.tensor(values).to(dtype)


def _numbers(t: kael.Tensor) -> np.ndarray:
    t = t.cpu()
    return (t.float() if t.dtype.is_half else t).numpy()


def _close(got: kael.Tensor, want: kael.Tensor) -> None:
    assert str(got.device) == "cuda:0" and got.dtype == want.dtype and got.shape == want.shape
    tol = TOL[want.dtype]
    np.testing.assert_allclose(_numbers(got), _numbers(want), rtol=tol, atol=tol)


def _ops(n: int, weight, bias):
    """name -> fn(x, weight, bias) over rows of n elements."""
    return {
        "softmax": lambda x, w, b: kael.softmax(x, -1),
        "log_softmax": lambda x, w, b: kael.log_softmax(x, -1),
        "softmin": lambda x, w, b: F.softmin(x, -1),
        "layer_norm": lambda x, w, b: F.layer_norm(x, (n,)),
        "layer_norm_affine": lambda x, w, b: F.layer_norm(x, (n,), w, b, eps=1e-3),
        "layer_norm_bias": lambda x, w, b: F.layer_norm(x, (n,), None, b),
        "rms_norm": lambda x, w, b: F.rms_norm(x, (n,)),
        "rms_norm_weight": lambda x, w, b: F.rms_norm(x, (n,), w, eps=0.25),
    }


def _row_kernels(fn, *args) -> tuple[kael.Tensor, list[str]]:
    """fn's result and the symbols of the row kernels it launched."""
    result, launches = record_launches(fn, *args)
    return result, [launch.symbol for launch in launches if "_rows_ptx_" in launch.symbol]


# cols -> the layout shape_for gives float32 rows of that length (see codegen/ptx/rows.py)
LAYOUTS = {
    7: "g32_k1_w1",  # scalar: 7 is no whole number of 16-byte vectors
    1024: "g32_k8_w4",  # the longest row a warp holds: 8 vectors a lane
    1028: "g256_k2_w4",  # one vector more: the CTA's threads
    1030: "g256_k5_w1",  # scalar rows in a CTA
    16388: "g256_k0_w4",  # past the CTA's registers: streamed, each pass reading the row again
}


@pytest.mark.parametrize("cols", list(LAYOUTS))
@pytest.mark.parametrize("op", list(_ops(1, None, None)))
def test_row_kernels_on_both_sides_of_the_warp_and_cta_switch_agree_with_the_cpu(op, cols):
    rows = 3 if cols < 8000 else 1
    x, w, b = _host((rows, cols), seed=1), _host((cols,), seed=2), _host((cols,), seed=3)
    fn = _ops(cols, w, b)[op]
    got, symbols = _row_kernels(fn, x.to(DEVICE), w.to(DEVICE), b.to(DEVICE))
    _close(got, fn(x, w, b))
    assert len(symbols) == 1 and symbols[0].endswith(LAYOUTS[cols]), symbols


@pytest.mark.parametrize("dtype", [kael.float64, *HALF], ids=str)
@pytest.mark.parametrize("cols", [40, 2000])
@pytest.mark.parametrize("op", list(_ops(1, None, None)))
def test_row_kernels_of_each_float_dtype_load_it_as_it_is(op, cols, dtype):
    # float16/bfloat16: computed in float32 inside the one kernel and rounded once, as the
    # CPU computes their widened copies: no conversion kernels around it
    x, w, b = (_host(s, dtype, seed) for s, seed in (((4, cols), 4), ((cols,), 5), ((cols,), 6)))
    fn = _ops(cols, w, b)[op]
    on_device = [t.to(DEVICE) for t in (x, w, b)]
    got, launches = record_launches(fn, *on_device)
    _close(got, fn(x, w, b))
    names = [launch.symbol for launch in launches]
    if op != "softmin":  # softmin negates its input first
        assert len(names) == 1 and f"_{dtype.name}_g" in names[0], names


def test_a_half_softmax_with_a_wider_dtype_converts_first_and_returns_that_dtype():
    x = _host((5, 64), kael.float16, 7)
    for dtype in (kael.float32, kael.float64):
        _close(kael.softmax(x.to(DEVICE), -1, dtype=dtype), kael.softmax(x, -1, dtype=dtype))
    got = kael.log_softmax(_host((5, 64), seed=8).to(DEVICE), 1, dtype=kael.bfloat16)
    _close(got, kael.log_softmax(_host((5, 64), seed=8), 1, dtype=kael.bfloat16))


def test_row_sliced_and_broadcast_rows_are_read_in_place_by_the_kernel():
    x = _host((6, 20), seed=9)
    d = x.to(DEVICE)
    for view in (lambda t: t[:, :9], lambda t: t[::2, 4:], lambda t: t[2:3].expand(4, 20)):
        got, symbols = _row_kernels(lambda t: kael.softmax(t, -1), view(d))
        _close(got, kael.softmax(view(x), -1))
        assert len(symbols) == 1
    got, symbols = _row_kernels(lambda t: F.layer_norm(t, (3, 4)), d.reshape(6, 5, 4)[:, 1:4])
    _close(got, F.layer_norm(x.reshape(6, 5, 4)[:, 1:4], (3, 4)))
    assert len(symbols) == 1


@pytest.mark.parametrize("op", ["softmax", "layer_norm", "rms_norm"])
def test_rows_strided_along_the_last_dim_take_the_composed_path(op):
    fn = _ops(8, None, None)[op]
    transposed, stepped = _host((16, 6), seed=10), _host((6, 16), seed=11)
    for x, view in ((transposed, lambda t: t[::2].T), (stepped, lambda t: t[:, ::2])):
        got, symbols = _row_kernels(fn, view(x.to(DEVICE)), None, None)
        _close(got, fn(view(x), None, None))
        assert symbols == []


def test_softmax_over_another_dim_takes_the_composed_path():
    x = _host((4, 9), seed=11)
    got, symbols = _row_kernels(lambda t: kael.softmax(t, 0), x.to(DEVICE))
    _close(got, kael.softmax(x, 0))
    assert symbols == []


@pytest.mark.parametrize("op", ["softmax", "layer_norm", "rms_norm"])
def test_under_compile_a_row_op_the_kernel_serves_is_one_extern_launch(op):
    """The compiled plan calls the row kernel (one launch) where the composed path would
    record its max, exp, sum and divide as kernels; a layout it does not serve stays
    recorded and fused."""
    fn = _ops(9, None, None)[op]
    x = _host((4, 9), seed=12)
    compiled = kael.compile(lambda t: fn(t * 2.0, None, None) + 1.0)
    _close(compiled(x.to(DEVICE)), fn(x * 2.0, None, None) + 1.0)
    text = str(compiled.inspect(x.to(DEVICE)))
    assert "1 extern steps" in text and "reduction" not in text
    transposed = _host((9, 4), seed=13)
    compiled_t = kael.compile(lambda t: fn(t.T, None, None) + 1.0)
    _close(compiled_t(transposed.to(DEVICE)), fn(transposed.T, None, None) + 1.0)
    assert "0 extern steps" in str(compiled_t.inspect(transposed.to(DEVICE)))


def test_empty_zero_d_and_one_element_rows():
    assert kael.softmax(kael.ones(3, 0).to(DEVICE), -1).shape == (3, 0)
    assert F.layer_norm(kael.ones(0, 5).to(DEVICE), (5,)).shape == (0, 5)
    assert F.rms_norm(kael.ones(0, 5).to(DEVICE), (5,)).shape == (0, 5)
    scalar = kael.tensor(2.5)
    _close(kael.softmax(scalar.to(DEVICE), 0), kael.softmax(scalar, 0))
    _close(kael.log_softmax(scalar.to(DEVICE), -1), kael.log_softmax(scalar, -1))
    one = _host((5, 1), seed=12)
    _close(F.layer_norm(one.to(DEVICE), (1,)), F.layer_norm(one, (1,)))


def test_special_values_give_the_cpus_results():
    inf, nan = float("inf"), float("nan")
    x = kael.tensor([[0.0, -inf, 1.0, 2.0], [-inf] * 4, [inf, 1.0, 2.0, 3.0], [nan, 1.0, 2.0, 3.0]])
    for fn in (lambda t: kael.softmax(t, -1), lambda t: kael.log_softmax(t, -1)):
        np.testing.assert_array_equal(_numbers(fn(x.to(DEVICE))), _numbers(fn(x)))
    for cols in (16, 1030):  # a warp's row and a CTA's: the squares overflow, rescaled pass
        huge = _host((3, cols), kael.float64, 13) * 1e200
        w, b = _host((cols,), kael.float64, 14), _host((cols,), kael.float64, 15)
        on_device = F.layer_norm(huge.to(DEVICE), (cols,), w.to(DEVICE), b.to(DEVICE))
        _close(on_device, F.layer_norm(huge, (cols,), w, b))
    constant = kael.full((2, 33), 7.25)
    np.testing.assert_array_equal(_numbers(F.layer_norm(constant.to(DEVICE), (33,))), 0.0)


@pytest.mark.parametrize("cols", [64, 1028, 16388], ids=["warp", "cta", "streamed"])
def test_a_capped_grid_walks_every_row(monkeypatch, cols):
    # more rows than the grid's CTAs: each warp or CTA takes rows grid-stride, reusing its
    # registers and shared memory row after row
    from kael.codegen.ptx import rows

    monkeypatch.setattr(rows, "MAX_BLOCKS", 1)
    x, w = _host((11 if cols < 8000 else 3, cols), seed=17), _host((cols,), seed=18)
    for fn in _ops(cols, w, w).values():
        _close(fn(x.to(DEVICE), w.to(DEVICE), w.to(DEVICE)), fn(x, w, w))


def test_row_kernels_repeat_their_bits_run_to_run():
    x = _host((3, 1500), seed=14).to(DEVICE)
    first = [kael.softmax(x, -1), F.layer_norm(x, (1500,)), F.rms_norm(x, (1500,))]
    second = [kael.softmax(x, -1), F.layer_norm(x, (1500,)), F.rms_norm(x, (1500,))]
    for a, b in zip(first, second):
        np.testing.assert_array_equal(_numbers(a), _numbers(b))


def test_parameters_that_do_not_fit_the_kernel_take_the_full_path():
    x, w = _host((4, 8), seed=15), _host((8,), kael.float64, 16)
    with pytest.raises(kael.TypeError, match="weight has dtype float64"):
        F.layer_norm(x.to(DEVICE), (8,), w.to(DEVICE))
    _close(F.rms_norm(x.to(DEVICE), (8,), w.to(DEVICE)), F.rms_norm(x, (8,), w))
    with pytest.raises(kael.Error, match=r"cuda:0 and cpu"):
        F.layer_norm(x.to(DEVICE), (8,), w.float())
