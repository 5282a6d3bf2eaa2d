"""torch.stft and torch.istft: the short-time Fourier transform of a signal (audio
features: spectrograms, mel filterbanks) and its overlap-add inverse, on kael's FFT.

stft frames the (optionally reflect-padded) signal as a strided view, one frame per hop,
multiplies each by the window (zero-padded to n_fft, centered) and transforms every frame
at once (rfft for a real signal: onesided); the result is [batch?, freq, frames]. istft
inverts each frame, windows it again, overlap-adds the frames with fold, and divides by
the overlap-added squared window (refused where that envelope vanishes, as PyTorch's
NOLA check). As PyTorch's, a real result (return_complex=False) is irfft of the first
n_fft // 2 + 1 bins, also of a two-sided spectrum; a complex one needs a two-sided spectrum.
"""

from __future__ import annotations

from kael.frontend import complex as cx
from kael.frontend import factories, fft, padding, views
from kael.frontend.outputs import tensor_arg
from kael.frontend.tensor import Tensor
from kael.runtime import user_warning
from kael.runtime.errors import Error, TypeError, ValueError

_NO_WINDOW = (
    "A window was not provided. A rectangular window will be applied,which is known to cause"
    " spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are"
    " recommended to reduce spectral leakage."
)


def _is_inexact(x: Tensor) -> bool:
    """Whether x is floating point or complex: what stft transforms (PyTorch refuses the rest)."""
    return x.dtype.is_floating_point or x.dtype.is_complex


def _window(window, n_fft: int, win_length: int, like: Tensor, op: str) -> Tensor:
    """The window zero-padded to n_fft, centered (ones where none is given), an integer or
    bool one in like's real dtype."""
    if window is None:
        window = factories.ones(win_length, dtype=like.dtype.to_real(), device=like.device)
    else:
        window = tensor_arg(window, op, "window")
        if window.shape != (win_length,):
            raise ValueError(
                f"{op}: expected a 1D window tensor of size equal to win_length={win_length},"
                f" but got window with size {list(window.shape)}"
            )
        if not _is_inexact(window):  # as the frames' product promotes it (bool too)
            window = window.to(like.dtype.to_real())
    if win_length == n_fft:
        return window
    left = (n_fft - win_length) // 2
    padded = factories.zeros(n_fft, dtype=window.dtype, device=window.device)
    padded[left : left + win_length] = window
    return padded


def _lengths(n_fft, hop_length, win_length, op: str) -> tuple[int, int, int]:
    n_fft = views.as_int(n_fft, "n_fft")
    hop = n_fft // 4 if hop_length is None else views.as_int(hop_length, "hop_length")
    win = n_fft if win_length is None else views.as_int(win_length, "win_length")
    if hop <= 0:
        raise ValueError(f"{op}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise ValueError(f"{op}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return n_fft, hop, win


def _reflect_padded(signal: Tensor, pad: int, mode: str) -> Tensor:
    """signal [batch, length] padded by `pad` at both ends in F.pad's `mode`, a complex
    signal part by part."""
    from kael.nn.functional import pad as f_pad

    if signal.dtype.is_complex:
        re, im = (_reflect_padded(p, pad, mode) for p in (cx.real(signal), cx.imag(signal)))
        return cx.complex(re.contiguous(), im.contiguous())
    return f_pad(signal.unsqueeze(1), (pad, pad), mode=mode).squeeze(1)


def stft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
    align_to_window: bool | None = None,
) -> Tensor:
    """The short-time Fourier transform of a 1-d signal or a [batch, length] batch:
    [batch?, n_fft // 2 + 1 (onesided) or n_fft, frames], as torch.stft. align_to_window
    (center=False only): frame m's window, centered in its n_fft points, starts at sample
    m * hop_length, so a window shorter than n_fft frames 1 + (length - win_length) //
    hop_length times."""
    x = tensor_arg(input, "stft")
    n_fft, hop, win = _lengths(n_fft, hop_length, win_length, "stft")
    if center and align_to_window is not None:
        raise ValueError("stft align_to_window should only be set when center = false")
    if return_complex is None and not x.dtype.is_complex:
        raise Error(
            "stft requires the return_complex parameter be given for real inputs, and will"
            " further require that return_complex=True in a future PyTorch release."
        )
    if x.ndim not in (1, 2):
        raise ValueError(f"stft: expected a 1D or 2D tensor, got {x.ndim}D")
    if window is None:
        user_warning.warn(_NO_WINDOW, UserWarning)
    if not _is_inexact(x):
        raise TypeError(
            f"stft: expected a tensor of floating point or complex values, but got {x.dtype}"
        )
    signal = x.unsqueeze(0) if x.ndim == 1 else x
    if center:
        signal = _reflect_padded(signal, n_fft // 2, pad_mode)
    elif align_to_window and win < n_fft:  # the zeros meet only the window's zero padding
        left = (n_fft - win) // 2
        signal = padding.pad(signal, (left, n_fft - win - left))
    length = signal.shape[-1]
    if not 0 < n_fft <= length:
        raise ValueError(f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    w = _window(window, n_fft, win, signal, "stft")
    frames = signal.unfold(-1, n_fft, hop) * w  # [batch, frames, n_fft]
    one = not (frames.dtype.is_complex or onesided is False)
    if onesided and frames.dtype.is_complex:
        raise ValueError("stft: onesided output is only possible for real inputs and windows")
    norm = "ortho" if normalized else "backward"
    spectrum = (fft.rfft if one else fft.fft)(frames, norm=norm).transpose(-1, -2)
    out = spectrum.squeeze(0) if x.ndim == 1 else spectrum
    return out if return_complex or return_complex is None else cx.view_as_real(out)


def istft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    normalized: bool = False,
    onesided: bool | None = None,
    length: int | None = None,
    return_complex: bool = False,
) -> Tensor:
    """The inverse of stft: each frame's inverse transform windowed, overlap-added and
    divided by the overlap-added squared window; [batch?, length]."""
    spec = tensor_arg(input, "istft")
    if not spec.dtype.is_complex:
        raise TypeError(f"istft requires a complex-valued input tensor, got {spec.dtype}")
    n_fft, hop, win = _lengths(n_fft, hop_length, win_length, "istft")
    if spec.ndim not in (2, 3):
        raise ValueError(f"istft: expected a tensor with 2 or 3 dimensions, got {spec.ndim}")
    if hop > win:
        raise ValueError(
            f"istft: expected 0 < hop_length <= win_length, but got hop_length={hop} and"
            f" win_length={win}"
        )
    if length is not None and views.as_int(length, "length") < 1:
        raise ValueError(f"istft: expected length > 0, but got length={length}")
    batched = spec if spec.ndim == 3 else spec.unsqueeze(0)
    bins, count = batched.shape[-2], batched.shape[-1]
    one = bins != n_fft if onesided is None else bool(onesided)
    expected, what = (n_fft // 2 + 1, "n_fft / 2 + 1") if one else (n_fft, "n_fft")
    if bins != expected:
        raise ValueError(
            f"istft: expected the frequency dimension (3rd to the last) of the input tensor to"
            f" match {what} when onesided={one}, but got {bins}"
        )
    if return_complex and one:
        raise ValueError("istft: Cannot have onesided output if window or input is complex")
    complex_window = window is not None and tensor_arg(window, "istft", "window").dtype.is_complex
    if complex_window and not return_complex:
        raise TypeError("istft: Complex windows are incompatible with return_complex=False")
    if window is None:
        user_warning.warn(
            "A window was not provided. A rectangular window will be applied.Please provide the"
            " same window used by stft to make the inversion lossless.",
            UserWarning,
        )
    frames_spec = batched.transpose(-1, -2)  # [batch, frames, bins]
    norm = "ortho" if normalized else "backward"
    if return_complex:
        frames = fft.ifft(frames_spec, n_fft, norm=norm)
    else:  # a two-sided spectrum keeps its first n_fft // 2 + 1 bins, as torch's
        frames = fft.irfft(frames_spec[..., : n_fft // 2 + 1], n_fft, norm=norm)
    w = _window(window, n_fft, win, cx.real(frames) if return_complex else frames, "istft")
    total = n_fft + hop * (count - 1)
    signal = _overlap_add(frames * w, total, hop)
    envelope = _overlap_add((w * w).expand(1, count, n_fft), total, hop)
    start = n_fft // 2 if center else 0
    end = total - (n_fft // 2 if center else 0) if length is None else start + length
    end = min(end, total)
    kept = envelope[..., start:end]
    if bool((kept.abs() < 1e-11).any()):
        raise Error(
            "istft: window overlap add min: the window's overlap-added square is below 1e-11"
            " somewhere (NOLA fails): the signal cannot be recovered there"
        )
    y = signal[..., start:end] / kept
    if length is not None and y.shape[-1] < length:
        y = _zero_extended(y, length)
    return y.squeeze(0) if spec.ndim == 2 else y


def _overlap_add(frames: Tensor, total: int, hop: int) -> Tensor:
    """frames [batch, count, n] summed into [batch, total] at offsets t * hop."""
    from kael.nn.functional import fold

    if frames.dtype.is_complex:
        re, im = (_overlap_add(p, total, hop) for p in (cx.real(frames), cx.imag(frames)))
        return cx.complex(re, im)
    n = frames.shape[-1]
    columns = frames.transpose(-1, -2).contiguous()  # [batch, n, count]: fold's layout
    return fold(columns, (1, total), (1, n), stride=(1, hop)).reshape(frames.shape[0], total)


def _zero_extended(y: Tensor, length: int) -> Tensor:
    out = factories.zeros(*y.shape[:-1], length, dtype=y.dtype, device=y.device)
    out[..., : y.shape[-1]] = y
    return out


FUNCTIONS = {"stft": stft, "istft": istft}
