"""kael.fft (frontend/fft.py) against torch.fft: every transform's values, dtype and shape
over lengths of every path (the direct DFT, radix-2 stages, Bluestein), n= padding and
trimming, dims, norms, real and integer inputs, the frequency helpers and shifts, and
torch's refusals."""

import numpy as np
import pytest
import torch

import kael

LENGTHS = [1, 2, 3, 8, 12, 64, 96, 128, 1000, 1024, 67, 4099]  # direct, radix-2, Bluestein
RTOL = {"complex64": 2e-6, "complex128": 5e-15, "float32": 2e-6, "float64": 5e-15}


def signal(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


def close(got: kael.Tensor, want: torch.Tensor):
    """Equal shape and dtype, values within RTOL of the result's largest magnitude (an FFT's
    error is relative to the transform's norm, not to each output)."""
    want = want.resolve_conj()
    assert got.shape == tuple(want.shape)
    name = str(want.dtype).removeprefix("torch.")
    assert str(got.dtype) == name
    scale = max(float(np.abs(want.numpy()).max()), 1e-300)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=RTOL[name] * scale * 4)


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
