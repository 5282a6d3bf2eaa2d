"""kael.stft and kael.istft (frontend/stft.py) against torch's: spectrogram values, shapes
and dtypes over hops, window lengths, centering and pad modes, normalization, one- and
two-sided output, batches and complex signals; the overlap-add inverse; torch's errors."""

import warnings

import numpy as np
import pytest
import torch

import kael

RNG = np.random.default_rng(0)
SIGNAL = RNG.standard_normal((2, 300)).astype(np.float32)


def close(got, want, atol=1e-5):
    assert got.shape == tuple(want.shape)
    assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=atol)


def both(fn, *args, **kwargs):
    """fn(kael, ...) and fn(torch, ...), each library's tensors and windows."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(kael, *args, **kwargs), fn(torch, *args, **kwargs)


@pytest.mark.parametrize(
    "options",
    [
        {}, {"hop_length": 7}, {"win_length": 40}, {"hop_length": 5, "win_length": 17},
        {"center": False}, {"pad_mode": "constant"}, {"pad_mode": "replicate"},
        {"normalized": True}, {"onesided": False}, {"window": None},
    ],
)  # fmt: skip
@pytest.mark.parametrize("batched", [True, False])
def test_stft_matches_torch(options, batched):
    def run(L):
        given = dict(options)
        x = L.tensor(SIGNAL if batched else SIGNAL[0])
        window = given.pop("window", L.hann_window(given.get("win_length", 64)))
        return L.stft(x, 64, window=window, return_complex=True, **given)

    close(*both(run))


def test_stft_of_float64_and_complex_signals_and_the_real_view_form():
    close(*both(lambda L: L.stft(L.tensor(SIGNAL.astype(np.float64)), 32, return_complex=True)))
    z = (SIGNAL + 1j * SIGNAL[::-1]).astype(np.complex64)
    close(*both(lambda L: L.stft(L.tensor(z), 32, window=L.hann_window(32))))  # two-sided
    got, want = both(lambda L: L.stft(L.tensor(SIGNAL), 32, return_complex=False))
    close(got, want)
    assert got.stride() == want.stride()  # the complex result's real view, as torch's


@pytest.mark.parametrize("length", [None, 300, 280, 320])
@pytest.mark.parametrize("center", [True, False])
def test_istft_matches_torch_and_inverts_stft(length, center):
    def run(L):  # uncentered frames need a window without zeros at its ends (NOLA)
        window = L.hann_window(64) if center else L.hamming_window(64)
        spec = L.stft(L.tensor(SIGNAL), 64, 16, window=window, center=center, return_complex=True)
        return L.istft(spec, 64, 16, window=window, center=center, length=length)

    got, want = both(run)
    close(got, want, atol=1e-4)  # the last samples divide by the envelope's thin edge
    if center and length == 300:
        np.testing.assert_allclose(got.numpy(), SIGNAL, atol=1e-5)


def test_istft_two_sided_and_normalized():
    def run(L):
        window = L.hamming_window(32)
        spec = L.stft(
            L.tensor(SIGNAL[0]),
            32,
            8,
            window=window,
            normalized=True,
            onesided=False,
            return_complex=True,
        )
        return L.istft(spec, 32, 8, window=window, normalized=True, onesided=False, length=300)

    close(*both(run))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda L: L.stft(L.ones(100), 16), "requires the return_complex parameter"),
        (lambda L: L.stft(L.ones(2, 3, 40), 8, return_complex=True), "1D or 2D"),
        (lambda L: L.stft(L.ones(100), 200, center=False, return_complex=True), "n_fft"),
        (lambda L: L.stft(L.ones(100), 16, win_length=20, return_complex=True), "win_length"),
        (lambda L: L.stft(L.ones(100), 16, hop_length=0, return_complex=True), "hop_length"),
        (lambda L: L.stft(L.ones(100), 16, window=L.ones(5), return_complex=True), "window"),
        (lambda L: L.istft(L.ones(9, 5), 16), "complex"),
        (lambda L: L.istft(L.ones(7, 5, dtype=L.complex64), 16, onesided=True), r"n_fft / 2 \+ 1"),
        (lambda L: L.istft(L.ones(9, 5, dtype=L.complex64), 16, window=L.zeros(16)), "overlap add"),
    ],
)
def test_bad_arguments_raise_as_torch(call, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError):
            call(torch)
        with pytest.raises(kael.Error, match=message):
            call(kael)


def test_a_missing_window_warns_as_torch():
    with pytest.warns(UserWarning, match="A window was not provided"):
        kael.stft(kael.ones(100), 16, return_complex=True)
    assert kael.ones(100).stft(16, window=kael.ones(16), return_complex=True).shape == (9, 26)


COMPLEX_SIGNAL = (SIGNAL[0] + 1j * SIGNAL[1]).astype(np.complex64)


def _spectrum(L, signal, onesided=None):
    """The stft of `signal` with a 16-point hann window and hop 4, as istft's input."""
    window = L.hann_window(16)
    return L.stft(L.tensor(signal), 16, 4, window=window, onesided=onesided, return_complex=True)


def _refused(call, error, message):
    """call(torch) raises, and call(kael) raises `error` (a kael.Error) matching message."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError):
            call(torch)
        with pytest.raises(error, match=message) as info:
            call(kael)
    assert isinstance(info.value, kael.Error)


@pytest.mark.parametrize("complex_signal", [False, True])
def test_istft_of_a_two_sided_spectrum_to_a_real_signal_irffts_its_half_as_torch(complex_signal):
    signal = COMPLEX_SIGNAL if complex_signal else SIGNAL[0]

    def run(L):
        spec = _spectrum(L, signal, onesided=False)
        return L.istft(spec, 16, 4, window=L.hann_window(16), onesided=False, length=300)

    got, want = both(run)
    close(got, want)
    if not complex_signal:  # a real signal's spectrum is Hermitian: it comes back
        np.testing.assert_allclose(got.numpy(), SIGNAL[0], atol=1e-5)


def test_istft_to_a_complex_signal_of_a_two_sided_spectrum_matches_torch():
    def run(L, window):
        spec = _spectrum(L, COMPLEX_SIGNAL)
        return L.istft(spec, 16, 4, window=window(L), return_complex=True, length=300)

    close(*both(run, lambda L: L.hann_window(16)))
    close(*both(run, lambda L: L.hann_window(16) * (1 + 0.5j)))


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_stft_refuses_integer_and_bool_signals_as_torch(dtype, center):
    """torch refuses them (bool with center=True in its reflection pad, NotImplementedError)."""

    def call(L):
        x = L.arange(50).to(getattr(L, dtype))
        return L.stft(x, 8, window=L.hann_window(8), center=center, return_complex=True)

    message = f"expected a tensor of floating point or complex values, but got {dtype}"
    _refused(call, kael.TypeError, message)


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_integer_and_bool_windows_promote_in_stft_and_istft_as_torch(dtype):
    def run(L):
        window = L.tensor(np.arange(16) % 3 + 1).to(getattr(L, dtype))
        spec = L.stft(L.tensor(SIGNAL[0]), 16, 4, window=window, return_complex=True)
        return spec, L.istft(spec, 16, 4, window=window, length=300)

    (spec, signal), (want_spec, want_signal) = both(run)
    close(spec, want_spec)
    close(signal, want_signal)


@pytest.mark.parametrize("onesided", [None, True])
def test_istft_to_a_complex_signal_refuses_a_onesided_spectrum_as_torch(onesided):
    def call(L):
        spec = _spectrum(L, SIGNAL[0])
        return L.istft(
            spec, 16, 4, window=L.hann_window(16), onesided=onesided, return_complex=True
        )

    _refused(call, kael.ValueError, "Cannot have onesided output if window or input is complex")


@pytest.mark.parametrize("signal", [SIGNAL[0], COMPLEX_SIGNAL], ids=["onesided", "two_sided"])
def test_istft_refuses_a_complex_window_for_a_real_signal_as_torch(signal):
    def call(L):
        window = L.hann_window(16) * (1 + 1j)
        return L.istft(_spectrum(L, signal), 16, 4, window=window)

    _refused(call, kael.TypeError, "Complex windows are incompatible with return_complex=False")


def test_istft_refuses_a_spectrum_of_other_than_n_fft_bins_when_two_sided_as_torch():
    def call(L):
        return L.istft(_spectrum(L, SIGNAL[0]), 16, 4, window=L.hann_window(16), onesided=False)

    _refused(call, kael.ValueError, "to match n_fft when onesided=False, but got 9")


@pytest.mark.parametrize("length", [-1, 0])
def test_istft_refuses_a_length_below_one_as_torch(length):
    def call(L):
        return L.istft(_spectrum(L, SIGNAL[0]), 16, 4, window=L.hann_window(16), length=length)

    _refused(call, kael.ValueError, f"expected length > 0, but got length={length}")
    close(
        *both(lambda L: L.istft(_spectrum(L, SIGNAL[0]), 16, 4, window=L.hann_window(16), length=1))
    )


def test_istft_refuses_a_hop_longer_than_the_window_as_torch():
    def call(L, hop):
        spec = L.stft(L.tensor(SIGNAL[0]), 16, hop, window=L.ones(16), return_complex=True)
        return L.istft(spec, 16, hop, window=L.ones(16), length=300)

    _refused(lambda L: call(L, 17), kael.ValueError, "expected 0 < hop_length <= win_length")
    got, want = both(call, 16)
    close(got, want)


@pytest.mark.parametrize(
    ("n_fft", "hop", "win"), [(64, 16, 32), (64, 16, 63), (64, 16, 64), (10, 3, 4)]
)
def test_align_to_window_starts_each_windows_samples_at_its_hop_as_torch(n_fft, hop, win):
    """A window shorter than n_fft, centered in its frame, meets samples m * hop onwards:
    1 + (length - win) // hop frames instead of 1 + (length - n_fft) // hop."""
    x = np.random.default_rng(3).standard_normal((2, 300))
    got = kael.stft(kael.tensor(x), n_fft, hop, win, kael.hann_window(win, dtype=kael.float64),
                    center=False, return_complex=True, align_to_window=True)  # fmt: skip
    want = torch.stft(torch.tensor(x), n_fft, hop, win, torch.hann_window(win, dtype=torch.float64),
                      center=False, return_complex=True, align_to_window=True)  # fmt: skip
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)


def test_align_to_window_with_center_is_refused_as_torch():
    with pytest.raises(
        RuntimeError, match="align_to_window should only be set when center = false"
    ):
        torch.stft(
            torch.ones(100), 16, window=torch.ones(16), return_complex=True, align_to_window=True
        )
    with pytest.raises(
        kael.ValueError, match="align_to_window should only be set when center = false"
    ):
        kael.stft(
            kael.ones(100), 16, window=kael.ones(16), return_complex=True, align_to_window=False
        )
