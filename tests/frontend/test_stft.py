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
    close(*both(lambda L: L.stft(L.tensor(SIGNAL), 32, return_complex=False)))


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
