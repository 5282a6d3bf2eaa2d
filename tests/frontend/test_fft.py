"""kael.fft (frontend/fft.py) against torch.fft: every transform's values, dtype and shape
over lengths of every path (the direct DFT, radix-2 stages, Bluestein), n= padding and
trimming, dims, norms, real and integer inputs, the frequency helpers and shifts, and
torch's refusals."""

import threading
import warnings

import numpy as np
import pytest
import torch

import kael
from kael.frontend import fft as kfft

LENGTHS = [1, 2, 3, 8, 12, 64, 96, 128, 1000, 1024, 67, 4099]  # direct, radix-2, Bluestein
RTOL = {"complex64": 2e-6, "complex128": 5e-15, "float32": 2e-6, "float64": 5e-15}


def signal(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


def close(got: kael.Tensor, want: torch.Tensor, computed_in: str | None = None):
    """Equal shape and dtype, values within RTOL (of the dtype computed in, by default the
    result's) of the result's largest magnitude (an FFT's error is relative to the
    transform's norm, not to each output)."""
    want = want.resolve_conj()
    assert got.shape == tuple(want.shape)
    name = str(want.dtype).removeprefix("torch.")
    assert str(got.dtype) == name
    scale = max(float(np.abs(want.numpy()).max()), 1e-300)
    atol = RTOL[computed_in or name] * scale * 4
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=atol)


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("op", ["fft", "ifft"])
def test_complex_transforms_match_torch_over_every_path(op, dtype, n):
    x = signal((3, n), dtype)
    close(getattr(kael.fft, op)(kael.tensor(x)), getattr(torch.fft, op)(torch.tensor(x)))


@pytest.mark.parametrize("n", [1, 2, 9, 10, 128, 1000, 67])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["rfft", "ihfft"])
def test_real_to_half_spectrum_transforms_match_torch(op, dtype, n):
    x = signal((2, n), dtype)
    close(getattr(kael.fft, op)(kael.tensor(x)), getattr(torch.fft, op)(torch.tensor(x)))


@pytest.mark.parametrize("n", [None, 9, 10, 16, 2])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("op", ["irfft", "hfft"])
def test_half_spectrum_to_real_transforms_match_torch(op, dtype, n):
    x = signal((2, 6), dtype)
    close(getattr(kael.fft, op)(kael.tensor(x), n), getattr(torch.fft, op)(torch.tensor(x), n))


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
@pytest.mark.parametrize("op", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_every_norm_matches_torch(op, norm):
    dtype = "float64" if op in ("rfft", "ihfft") else "complex128"
    x = signal((3, 10), dtype)
    close(
        getattr(kael.fft, op)(kael.tensor(x), norm=norm),
        getattr(torch.fft, op)(torch.tensor(x), norm=norm),
    )


@pytest.mark.parametrize("n, dim", [(5, 0), (16, 0), (7, -1), (3, 1), (12, -2)])
def test_n_pads_or_trims_along_dim(n, dim):
    x = signal((6, 5), "complex128")
    close(kael.fft.fft(kael.tensor(x), n, dim), torch.fft.fft(torch.tensor(x), n, dim))
    r = signal((6, 5), "float64")
    close(kael.fft.rfft(kael.tensor(r), n, dim), torch.fft.rfft(torch.tensor(r), n, dim))


@pytest.mark.parametrize(
    "op, kwargs",
    [
        ("fft2", {}), ("ifft2", {}), ("fftn", {}), ("ifftn", {}), ("rfft2", {}),
        ("rfftn", {}), ("irfft2", {}), ("irfftn", {}), ("fftn", {"s": (4, 6)}),
        ("fftn", {"dim": (0, 2)}), ("rfftn", {"s": (5, 8), "dim": (0, 1)}),
        ("irfftn", {"s": (4, 10)}), ("fft2", {"norm": "ortho"}), ("ifftn", {"norm": "forward"}),
    ],
)  # fmt: skip
def test_multi_dim_transforms_match_torch(op, kwargs):
    real_input = op.startswith("rfft")
    x = signal((3, 4, 6), "float64" if real_input else "complex128")
    close(
        getattr(kael.fft, op)(kael.tensor(x), **kwargs),
        getattr(torch.fft, op)(torch.tensor(x), **kwargs),
    )


@pytest.mark.parametrize("dtype", ["int64", "bool", "float32"])
def test_real_and_integer_inputs_promote_as_torch(dtype):
    x = kael.tensor(np.arange(6) % 3).to(getattr(kael, dtype))
    t = torch.tensor(np.arange(6) % 3).to(getattr(torch, dtype))
    close(kael.fft.fft(x), torch.fft.fft(t))
    close(kael.fft.rfft(x), torch.fft.rfft(t))


def test_strided_and_transposed_inputs_and_out():
    x = signal((8, 6), "complex64")
    k, t = kael.tensor(x), torch.tensor(x)
    close(kael.fft.fft(k.t()), torch.fft.fft(t.t()))
    close(kael.fft.fft(k[::2, 1:]), torch.fft.fft(t[::2, 1:]))
    out = kael.empty(8, 6, dtype=kael.complex64)
    assert kael.fft.fft(k, out=out) is out
    close(out, torch.fft.fft(t))


def test_a_round_trip_gives_the_signal_back():
    x = signal((4, 1000), "complex128")
    back = kael.fft.ifft(kael.fft.fft(kael.tensor(x)))
    np.testing.assert_allclose(back.numpy(), x, atol=1e-13)
    r = signal((4, 999), "float64")
    np.testing.assert_allclose(
        kael.fft.irfft(kael.fft.rfft(kael.tensor(r)), 999).numpy(), r, atol=1e-13
    )


@pytest.mark.parametrize("n, d", [(1, 1.0), (5, 1.0), (6, 0.5), (7, 2.0)])
def test_frequencies_match_torch(n, d):
    close(kael.fft.fftfreq(n, d), torch.fft.fftfreq(n, d))
    close(kael.fft.rfftfreq(n, d), torch.fft.rfftfreq(n, d))
    close(kael.fft.fftfreq(n, d, dtype=kael.float64), torch.fft.fftfreq(n, d, dtype=torch.float64))


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1])
def test_shifts_match_torch(dim):
    x = np.arange(30).reshape(5, 6)
    for op in ("fftshift", "ifftshift"):
        got = getattr(kael.fft, op)(kael.tensor(x), dim)
        np.testing.assert_array_equal(
            got.numpy(), getattr(torch.fft, op)(torch.tensor(x), dim).numpy()
        )


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda F, L: F.fft(L.ones(4), 0), ValueError, r"Invalid number of data points \(0\)"),
        (lambda F, L: F.fft(L.ones(0)), ValueError, r"Invalid number of data points \(0\)"),
        (lambda F, L: F.fft(L.ones(4), norm="bad"), ValueError, "Invalid normalization mode"),
        (lambda F, L: F.rfft(L.ones(4, dtype=L.complex64)), TypeError, "expects a real input"),
        (lambda F, L: F.ihfft(L.ones(4, dtype=L.complex64)), TypeError, "expects a real input"),
        (lambda F, L: F.fft(L.ones(4, dtype=L.float16)), TypeError, "Unsupported dtype"),
        (lambda F, L: F.fft(L.ones(4), dim=1), IndexError, "out of range"),
        (lambda F, L: F.fftn(L.ones(4, 4), s=(2,), dim=(0, 1)), ValueError, "same length"),
        (lambda F, L: F.fftn(L.ones(4, 4), dim=(0, 0)), ValueError, "unique"),
    ],
)
def test_bad_arguments_raise_typed_errors_as_torch_refuses(call, error, message):
    with pytest.raises((RuntimeError, error)):
        call(torch.fft, torch)
    with pytest.raises(error, match=message) as info:
        call(kael.fft, kael)
    assert isinstance(info.value, kael.Error)


def test_tables_are_shared_between_threads():
    import threading

    x = kael.tensor(signal((2, 384), "complex64"))
    want = torch.fft.fft(torch.tensor(x.numpy()))
    results = []
    threads = [threading.Thread(target=lambda: results.append(kael.fft.fft(x))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for got in results:
        close(got, want)


# ---- out= ---------------------------------------------------------------------------------------

ONE_DIM_OUT = [  # op, input dtype, an out dtype torch refuses, its message
    ("fft", "float32", "float64", "expects a complex output tensor"),
    ("ifft", "complex64", "float32", "expects a complex output tensor"),
    ("rfft", "float32", "float32", "expects a complex output tensor"),
    ("ihfft", "float64", "int64", "expects a complex output tensor"),
    ("irfft", "complex64", "complex64", "expects a floating point output tensor"),
    ("hfft", "complex128", "int64", "expects a floating point output tensor"),
    ("fftn", "complex64", "float32", "expects a complex output tensor"),
    ("rfft2", "float64", "float64", "expects a complex output tensor"),
    ("ihfftn", "float32", "float32", "expects a complex output tensor"),
    ("irfftn", "complex64", "complex128", "expects a floating point output tensor"),
    ("hfft2", "complex64", "bool", "expects a floating point output tensor"),
]


@pytest.mark.parametrize("op, dtype, out_dtype, message", ONE_DIM_OUT)
def test_an_out_of_the_wrong_kind_is_refused_as_torch(op, dtype, out_dtype, message):
    x = signal((4, 6), dtype)
    with pytest.raises(RuntimeError, match=message):
        getattr(torch.fft, op)(torch.tensor(x), out=torch.empty(0, dtype=getattr(torch, out_dtype)))
    with pytest.raises(kael.TypeError, match=f"{op} {message}, but got {out_dtype}"):
        getattr(kael.fft, op)(kael.tensor(x), out=kael.empty(0, dtype=getattr(kael, out_dtype)))


@pytest.mark.parametrize(
    "op, dtype, out_dtype",
    [
        ("fft", "float32", "complex128"), ("fft", "float64", "complex64"),
        ("irfft", "complex64", "float64"), ("hfftn", "complex128", "float32"),
        ("rfftn", "float32", "complex64"), ("ihfft2", "float32", "complex128"),
    ],
)  # fmt: skip
def test_an_out_of_the_right_kind_takes_the_result_cast_as_torch(op, dtype, out_dtype):
    x = signal((4, 6), dtype)
    out = kael.empty(4, 6, dtype=getattr(kael, out_dtype))
    want = getattr(torch.fft, op)(
        torch.tensor(x), out=torch.empty(4, 6, dtype=getattr(torch, out_dtype))
    )
    assert getattr(kael.fft, op)(kael.tensor(x), out=out) is out
    single = dtype in ("float32", "complex64")
    close(out, want, computed_in="float32" if single else "float64")


@pytest.mark.parametrize("op", ["fft", "rfft", "irfft", "fft2", "irfftn", "ihfftn"])
def test_an_empty_out_is_resized_silently_as_torch(op):
    x = signal((3, 8), "complex64" if op in ("irfft", "irfftn") else "float32")
    want = getattr(torch.fft, op)(torch.tensor(x))
    out = kael.empty(0, dtype=getattr(kael, str(want.dtype).removeprefix("torch.")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert getattr(kael.fft, op)(kael.tensor(x), out=out) is out
    close(out, want)


def test_an_out_holding_elements_of_another_shape_is_resized_with_torchs_warning():
    x = signal((5,), "float32")
    with pytest.warns(UserWarning, match="was resized"):
        want = torch.fft.fft(torch.tensor(x), out=torch.empty(2, dtype=torch.complex64))
    out = kael.empty(2, dtype=kael.complex64)
    with pytest.warns(UserWarning, match="was resized"):
        kael.fft.fft(kael.tensor(x), out=out)
    close(out, want)


def test_out_must_be_a_tensor():
    with pytest.raises(kael.TypeError, match="out must be a Tensor"):
        kael.fft.fft(kael.ones(4), out=np.zeros(4, dtype=np.complex64))


# ---- several dims: no dims, s, the 2-d forms' dims ----------------------------------------------


@pytest.mark.parametrize("op", ["fftn", "ifftn", "fft2", "ifft2"])
@pytest.mark.parametrize("dtype", ["complex64", "float32"])
def test_a_complex_transform_over_no_dims_is_a_new_tensor_as_torch(op, dtype):
    x = signal((2, 3), dtype)
    k, t = kael.tensor(x), torch.tensor(x)
    got, want = getattr(kael.fft, op)(k, dim=()), getattr(torch.fft, op)(t, dim=())
    close(got, want)
    got.mul_(10)
    np.testing.assert_array_equal(k.numpy(), x)


@pytest.mark.parametrize("op", ["fftn", "ifftn"])
def test_a_complex_transform_of_a_0d_tensor_is_a_new_tensor_as_torch(op):
    k = kael.tensor(2 + 1j)
    got = getattr(kael.fft, op)(k)
    close(got, getattr(torch.fft, op)(torch.tensor(2 + 1j)))
    assert got is not k
    got.mul_(10)
    assert k.item() == 2 + 1j


@pytest.mark.parametrize(
    "op", ["rfftn", "irfftn", "rfft2", "irfft2", "hfftn", "ihfftn", "hfft2", "ihfft2"]
)
def test_a_real_transform_over_no_dims_is_refused_as_torch(op):
    dtype = "float32" if op.startswith(("rfft", "ihfft")) else "complex64"
    x = signal((3, 3), dtype)
    with pytest.raises(RuntimeError, match="must transform at least one axis"):
        getattr(torch.fft, op)(torch.tensor(x), dim=())
    with pytest.raises(kael.ValueError, match=f"{op} must transform at least one axis"):
        getattr(kael.fft, op)(kael.tensor(x), dim=())
    if op.endswith("n"):  # the n-d forms' default dims of a 0-d input: none
        with pytest.raises(RuntimeError, match="must transform at least one axis"):
            getattr(torch.fft, op)(torch.tensor(x[0, 0]))
        with pytest.raises(kael.ValueError, match="must transform at least one axis"):
            getattr(kael.fft, op)(kael.tensor(x[0, 0]))


@pytest.mark.parametrize(
    "op, shape, s",
    [
        ("fftn", (3, 4), (-1, 8)), ("fftn", (3, 4), (-1, -1)), ("ifft2", (2, 3, 4), (5, -1)),
        ("rfftn", (4, 5), (-1, -1)), ("rfft2", (4, 5), (3, -1)), ("irfftn", (4, 5), (4, -1)),
        ("irfft2", (4, 5), (-1, 7)), ("hfftn", (4, 5), (-1, -1)), ("ihfft2", (4, 6), (-1, 5)),
    ],
)  # fmt: skip
def test_an_s_entry_of_minus_one_keeps_that_dims_size_as_torch(op, shape, s):
    complex_input = op.startswith(("irfft", "hfft")) or op in ("fftn", "ifft2")
    x = signal(shape, "complex128" if complex_input else "float64")
    close(getattr(kael.fft, op)(kael.tensor(x), s=s), getattr(torch.fft, op)(torch.tensor(x), s=s))


@pytest.mark.parametrize("s", [(-2, 8), (0, 8)])
def test_other_non_positive_s_entries_are_refused_as_torch(s):
    with pytest.raises(RuntimeError, match=rf"Invalid number of data points \({s[0]}\)"):
        torch.fft.fftn(torch.ones(3, 4), s=s)
    with pytest.raises(kael.ValueError, match=rf"Invalid number of data points \({s[0]}\)"):
        kael.fft.fftn(kael.ones(3, 4), s=s)


@pytest.mark.parametrize(
    "op, shape, s",
    [
        ("fft2", (3, 4), (5,)), ("ifft2", (3, 4), (2, 2, 2)), ("rfft2", (2, 3, 4), (2, 3, 6)),
        ("irfft2", (3, 4), (4,)), ("hfft2", (3, 4), (4,)), ("ihfft2", (2, 3, 4), (1, 2, 3)),
    ],
)  # fmt: skip
def test_the_2d_forms_take_the_last_two_dims_and_refuse_an_s_of_another_length(op, shape, s):
    complex_input = op in ("fft2", "ifft2", "irfft2", "hfft2")
    x = signal(shape, "complex64" if complex_input else "float32")
    message = "dim and shape arguments must have the same length"
    with pytest.raises(RuntimeError, match=message):
        getattr(torch.fft, op)(torch.tensor(x), s=s)
    with pytest.raises(kael.ValueError, match=message):
        getattr(kael.fft, op)(kael.tensor(x), s=s)
    x3 = signal((2, 3, 4), "complex64" if complex_input else "float32")  # dims (-2, -1)
    close(getattr(kael.fft, op)(kael.tensor(x3)), getattr(torch.fft, op)(torch.tensor(x3)))


@pytest.mark.parametrize("dim", [(0,), 0, (1, 0)])
def test_the_2d_forms_take_any_dims_given_as_torch(dim):
    x = signal((3, 4, 2), "complex128")
    close(kael.fft.fft2(kael.tensor(x), dim=dim), torch.fft.fft2(torch.tensor(x), dim=dim))


def test_the_2d_forms_refuse_dim_none_as_torch():
    with pytest.raises(TypeError, match="argument 'dim' must be tuple of ints, not NoneType"):
        torch.fft.fft2(torch.ones(2, 2), dim=None)
    with pytest.raises(kael.TypeError, match="argument 'dim' must be tuple of ints"):
        kael.fft.fft2(kael.ones(2, 2), dim=None)
    assert kael.fft.fftn(kael.ones(2, 3), dim=None).shape == (2, 3)


def test_an_s_longer_than_the_input_is_refused_as_torch():
    with pytest.raises(RuntimeError, match="Got shape with 3 values but input tensor only has 2"):
        torch.fft.fftn(torch.ones(2, 2), s=(2, 2, 2))
    with pytest.raises(kael.ValueError, match="Got shape with 3 values but input tensor only"):
        kael.fft.fftn(kael.ones(2, 2), s=(2, 2, 2))


# ---- the Hermitian transforms over several dims -------------------------------------------------


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize(
    "op, shape, kwargs",
    [
        ("hfft2", (4, 4), {}), ("hfft2", (2, 5, 6), {}), ("hfftn", (3, 4, 5), {}),
        ("hfftn", (3, 4, 5), {"s": (6, 9)}), ("hfftn", (4, 5), {"dim": (1, 0)}),
        ("hfft2", (5, 3), {"s": (4, 7)}), ("hfftn", (7,), {}),
        ("ihfft2", (4, 4), {}), ("ihfft2", (2, 5, 7), {}), ("ihfftn", (3, 4, 5), {}),
        ("ihfftn", (3, 4, 6), {"s": (5, 8)}), ("ihfftn", (4, 5), {"dim": (1, 0)}),
        ("ihfft2", (6, 3), {"s": (2, 9)}), ("ihfftn", (7,), {}),
    ],
)  # fmt: skip
def test_hermitian_multi_dim_transforms_match_torch(op, shape, kwargs, norm):
    x = signal(shape, "complex128" if op.startswith("hfft") else "float64")
    close(
        getattr(kael.fft, op)(kael.tensor(x), norm=norm, **kwargs),
        getattr(torch.fft, op)(torch.tensor(x), norm=norm, **kwargs),
    )


@pytest.mark.parametrize("op", ["hfft2", "hfftn", "ihfft2", "ihfftn"])
def test_hermitian_multi_dim_transforms_match_torch_in_single_precision(op):
    x = signal((3, 6, 10), "complex64" if op.startswith("hfft") else "float32")
    close(getattr(kael.fft, op)(kael.tensor(x)), getattr(torch.fft, op)(torch.tensor(x)))


def test_ihfftn_inverts_hfftn():
    x = signal((4, 6), "float64")
    back = kael.fft.hfftn(kael.fft.ihfftn(kael.tensor(x)), s=(4, 6))
    np.testing.assert_allclose(back.numpy(), x, atol=1e-13)


def test_ihfftn_refuses_a_complex_input_and_a_bad_norm():
    with pytest.raises(RuntimeError):
        torch.fft.ihfftn(torch.ones(4, 4, dtype=torch.complex64))
    with pytest.raises(kael.TypeError, match="ihfftn expects a real input"):
        kael.fft.ihfftn(kael.ones(4, 4, dtype=kael.complex64))
    with pytest.raises(kael.ValueError, match='hfft2: Invalid normalization mode: "bad"'):
        kael.fft.hfft2(kael.ones(4, 4), norm="bad")


# ---- frequencies --------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "uint8"])
def test_the_frequencies_refuse_a_non_float_dtype_as_torch(op, dtype):
    with pytest.raises(RuntimeError, match="requires a floating point or complex dtype"):
        getattr(torch.fft, op)(4, dtype=getattr(torch, dtype))
    with pytest.raises(kael.TypeError, match=f"{op} requires a floating point or complex dtype"):
        getattr(kael.fft, op)(4, dtype=getattr(kael, dtype))


@pytest.mark.parametrize("op", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("dtype", ["float64", "complex64"])
def test_the_frequencies_take_a_float_or_complex_dtype(op, dtype):
    want = getattr(torch.fft, op)(7, 0.5, dtype=torch.float64).to(getattr(torch, dtype))
    close(getattr(kael.fft, op)(7, 0.5, dtype=getattr(kael, dtype)), want)


@pytest.mark.parametrize("op", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
def test_the_frequencies_multiply_by_the_rounded_reciprocal_as_torch(op, dtype):
    """torch multiplies its arange by 1 / (n d) rounded to the dtype (mul_ by a Scalar),
    which rounds otherwise than dividing by n d: bit for bit its values, d = +-0 (+-inf,
    NaN at 0) and NaN included."""
    for n in (0, 1, 2, 7, 97, 1000, 1001, 4097):
        for d in (1.0, 2, 0.1, 3.7, -0.5, 0.0, -0.0, float("nan")):
            k = torch.from_dlpack(getattr(kael.fft, op)(n, d, dtype=getattr(kael, dtype)))
            t = getattr(torch.fft, op)(n, d, dtype=getattr(torch, dtype))
            assert k.dtype == t.dtype and k.shape == t.shape
            torch.testing.assert_close(k, t, rtol=0, atol=0, equal_nan=True, msg=f"{n}, {d}")
            kept = ~t.isnan()
            assert torch.equal(k[kept].signbit(), t[kept].signbit()), (n, d)


def test_tables_built_inside_a_trace_serve_other_threads():
    """fft's cached tables are every thread's: one first built while kael.compile traces
    holds real values, so another thread (or a forked child) reads them mid-trace."""
    n = 52  # a length no other test builds tables for
    for key in [k for k in kfft._TABLES if k[1] in (n, n // 4, 13)]:
        del kfft._TABLES[key]
    signal = kael.randn(3, n, dtype=kael.complex64)
    seen = []

    def other():
        try:
            seen.append(kael.fft.fft(signal))
        except Exception as error:  # noqa: BLE001 - the failure is what is checked
            seen.append(error)

    @kael.compile
    def transform(x):
        y = kael.fft.fft(x)
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        return y * 2

    got = transform(signal)
    assert isinstance(seen[0], kael.Tensor), seen[0]
    want = np.fft.fft(signal.numpy())
    np.testing.assert_allclose(seen[0].numpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got.numpy(), 2 * want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [kael.float32, kael.bfloat16], ids=str)
def test_transforms_run_in_float32_under_cpu_autocast_as_torch(dtype):
    """torch keeps the FFTs and stft in float32 under CPU autocast; kael's own product
    inside them is not lowered either (it raised for a bfloat16 view before)."""
    x = kael.randn(2, 64).to(dtype)
    with kael.autocast("cpu"):
        spectrum = kael.fft.fft(x)
        real = kael.fft.irfft(kael.fft.rfft(x), 64)
        frames = kael.stft(x[0], 16, window=kael.hann_window(16), return_complex=True)
    assert spectrum.dtype is kael.complex64 and real.dtype is kael.float32
    assert frames.dtype is kael.complex64
    want = np.fft.fft(x.float().numpy())
    np.testing.assert_allclose(spectrum.numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts_of_a_0d_tensor_as_torch(name):
    """No dim: nothing to roll, refused as torch's roll; a dim: torch's IndexError."""
    k, t = getattr(kael.fft, name), getattr(torch.fft, name)
    with pytest.raises(RuntimeError, match="`shifts` required"):
        t(torch.tensor(3.0))
    with pytest.raises(kael.Error, match="`shifts` required"):
        k(kael.tensor(3.0))
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        t(torch.tensor(3.0), dim=0)
    with pytest.raises(
        kael.IndexError, match="Dimension specified as 0 but tensor has no dimensions"
    ):
        k(kael.tensor(3.0), dim=0)


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_frequencies_written_into_out_as_torch(name, dtype):
    out = kael.empty(0, dtype=dtype)
    want = getattr(torch.fft, name)(5, 0.5, out=torch.empty(0, dtype=getattr(torch, str(dtype))))
    got = getattr(kael.fft, name)(5, 0.5, out=out)
    assert got is out and out.dtype is dtype and out.tolist() == want.tolist()


@pytest.mark.parametrize("n", [2, 6, 8, 12, 98, 196, 400, 512, 1000, 1028])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_real_signals_nyquist_term_is_real_as_torchs(n, dtype):
    """A real signal's DC and Nyquist terms have no imaginary part (exact quarter-turn
    twiddles, as pocketfft's, told in integers: 196 * (2 / 196) is not 2; a Bluestein
    length's terms made real), so their phase is torch's (pi, not -pi, for a negative one)."""
    x = np.random.default_rng(n).standard_normal(n).astype(dtype)
    x[0] = -abs(x).sum()  # a negative DC term
    for name in ("rfft", "fft", "ifft"):
        got = getattr(kael.fft, name)(kael.from_numpy(x))
        want = getattr(torch.fft, name)(torch.from_numpy(x))
        for k in (0, n // 2):
            assert got.imag[k].item() == 0.0 == want.imag[k].item()
            assert got.angle()[k].item() == want.angle()[k].item()


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn", "hfftn"])
def test_an_int_s_is_one_length_for_the_last_dim_as_torchs(name):
    got = getattr(kael.fft, name)(kael.ones(4, 4), 3)
    want = getattr(torch.fft, name)(torch.ones(4, 4), 3)
    assert got.shape == tuple(want.shape) and str(got.dtype) == str(want.dtype).split(".")[-1]
    torch.testing.assert_close(torch.from_dlpack(got), want)


_LAYOUT_CASES = {
    "rfft2": lambda m, x: m.fft.rfft2(x),
    "rfftn dims (1, 0)": lambda m, x: m.fft.rfftn(x, dim=(1, 0)),
    "rfftn dims (0, 1)": lambda m, x: m.fft.rfftn(x, dim=(0, 1)),
    "fftn dims (1, 0)": lambda m, x: m.fft.fftn(x, dim=(1, 0)),
    "fft2 dims (0, 2)": lambda m, x: m.fft.fft2(x, dim=(0, 2)),
    "fftn of a transpose": lambda m, x: m.fft.fftn(x.transpose(0, 2), dim=(0, 1)),
    "rfft2 of a transpose": lambda m, x: m.fft.rfft2(x.transpose(1, 2)),
    "irfftn dims (1, 0)": lambda m, x: m.fft.irfftn(m.fft.rfftn(x, dim=(1, 0)), dim=(1, 0)),
    "hfftn dims (0, 1)": lambda m, x: m.fft.hfftn(x.to(m.complex64), dim=(0, 1)),
    "ihfftn dims (0, 1)": lambda m, x: m.fft.ihfftn(x, dim=(0, 1)),
    "ihfft2": lambda m, x: m.fft.ihfft2(x),
    "fftn": lambda m, x: m.fft.fftn(x),
}


@pytest.mark.parametrize("case", list(_LAYOUT_CASES))
def test_transforms_over_several_dims_lay_out_their_result_as_torch(case):
    """torch's plans put the untouched dims outermost and a real transform's halved dim
    innermost: rfft2(x).view(n, -1) works on its result."""
    values = signal((2, 10, 12), "float32")
    want = _LAYOUT_CASES[case](torch, torch.from_numpy(values))
    got = _LAYOUT_CASES[case](kael, kael.from_numpy(values))
    close(got, want)
    assert got.stride() == want.stride()
