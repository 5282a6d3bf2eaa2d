"""torch.fft: discrete Fourier transforms on kael's complex tensors (frontend/complex.py).

One transform along the last dim, of length N = P 2^m (P odd), runs as:
- P <= 192: a DFT of the N / C interleaved subsequences of stride C = 2^j as one real
  matmul (complex.matmul's real form) against the B x B DFT matrix (B = P 2^(m-j), at
  most max(64, P)), then j radix-2 stages, each merging pairs of phases with one twiddle
  table: out = even +- w odd, one kernel of four outputs on planar parts (real and
  imaginary arrays apart: unit-stride where the pairs are stride 2; 1M points 13 -> 8.7
  ms) (VanderPlas's vectorized Cooley-Tukey; every stage streams the whole batch at once;
  radix-4 stages measured no faster here);
- larger odd parts: Bluestein's chirp-z, a circular convolution of power-of-two length
  M >= 2N - 1 done with that power-of-two transform.
DFT matrices, twiddles and chirps are computed by kael's kernels in float64 from exact
integer phases (n k mod N), rounded once to the transform's precision, and cached per
(length, direction, dtype, device). The inverse is the same with conjugate twiddles. The
real transforms build on the complex one: rfft of an even N transforms the N / 2 pairs
(x[2k] + i x[2k + 1]) and untangles the half spectrum from it, of an odd N keeps the
first outputs of the complex transform; irfft extends the half spectrum by Hermitian
symmetry and keeps the real part. hfftn is irfftn of the conjugate and ihfftn the
conjugate of rfftn, each with the normalization on the other side.

out= follows torch: complex for a complex result, floating point for a real one, of
either precision (the result is cast into it), resized to the result's shape. Deviation:
fftfreq and rfftfreq compute in a complex dtype given one (torch's arange refuses it).

Errors grow like log2(N) roundings of the transform's precision (pocketfft, PyTorch's CPU
library, grows like sqrt(log N)); tests/frontend/test_fft.py bounds both precisions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kael.frontend import complex as cx
from kael.frontend import elementwise as ew
from kael.frontend import factories, formula, views
from kael.frontend.linalg import matmul  # not Tensor.__matmul__: autocast never lowers it
from kael.frontend.memory_formats import copy_with, is_non_overlapping_and_dense, strides_in_order
from kael.frontend.out_forms import with_out
from kael.frontend.outputs import output, tensor_arg
from kael.frontend.tensor import Tensor, empty_impl
from kael.runtime.dtypes import DType, float64, get_default_dtype, int64
from kael.runtime.errors import IndexError, TypeError, ValueError
from kael.runtime.tensor_impl import contiguous_strides
from kael.runtime.tracestate import untraced

NORMS = ("backward", "ortho", "forward")
_DIRECT = 64  # the DFT matrix grows by powers of two up to this size
_ODD_DIRECT = 192  # an odd factor up to this is one DFT matrix (1000 = 125 x 8), past it Bluestein
_TABLES: dict[tuple, Tensor] = {}  # (kind, length, inverse, dtype, device) -> constant tensor


# ---- constants ----------------------------------------------------------------------------------


def _phases(rows: int, cols: int, period: int, inverse: bool, dtype: DType, device) -> Tensor:
    """exp(-+2 pi i (r c mod period) / period) for r < rows, c < cols, as `dtype`."""
    r = factories.arange(rows, dtype=int64, device=device).reshape(rows, 1)
    c = factories.arange(cols, dtype=int64, device=device).reshape(1, cols)
    return _circle((r * c).remainder(period).to(float64), period / 2, inverse, dtype)


def _table(kind: str, length: int, inverse: bool, dtype: DType, device) -> Tensor:
    """A cached constant: the DFT matrix, a stage's twiddles or a Bluestein chirp."""
    key = (kind, length, inverse, dtype, device)
    found = _TABLES.get(key)
    if found is None:  # two threads may both build it: either one serves
        with untraced():  # built now even under kael.compile: the cache is every thread's
            found = _TABLES[key] = _build(kind, length, inverse, dtype, device)
    return found


def _build(kind: str, length: int, inverse: bool, dtype: DType, device) -> Tensor:
    if kind == "dft":
        return _phases(length, length, length, inverse, dtype, device)
    if kind == "dft_real":  # the DFT matrix's real form: a row of pairs times it, one product
        return cx.real_form(_table("dft", length, inverse, dtype, device))
    if kind == "dft_planar":  # its columns reordered: the products' real parts, then imaginary
        pairs = _table("dft_real", length, inverse, dtype, device).reshape(2 * length, length, 2)
        return pairs.transpose(-1, -2).reshape(2 * length, 2 * length).contiguous()
    if kind == "bluestein":  # the transform of the conjugate chirp, wrapped to length M
        chirp = _table("chirp", length, inverse, dtype, device)
        size = 1 << (2 * length - 2).bit_length()
        kernel = factories.zeros(size, dtype=dtype, device=device)
        kernel[:length] = chirp.conj()
        kernel[size - length + 1 :] = chirp[1:].conj().flip(0)
        return _transform(kernel, False)
    if kind == "irfft":  # exp(+2 pi i k / length), k < length / 2: tangling pairs back
        k = factories.arange(length // 2, dtype=int64, device=device)
        return _circle((2 * k).to(float64), length, True, dtype)
    if kind == "rfft":  # exp(-2 pi i k / length), k <= length / 2: untangling pairs
        k = factories.arange(length // 2 + 1, dtype=int64, device=device)
        return _circle((2 * k).to(float64), length, inverse, dtype)
    n = factories.arange(length, dtype=int64, device=device)
    if kind == "twiddle":  # exp(-+i pi k / length): merging two transforms of `length`
        return _circle(n.to(float64), length, inverse, dtype)
    # chirp: exp(-+i pi n^2 / length), n^2 taken mod 2 length first
    return _circle((n * n).remainder(2 * length).to(float64), length, inverse, dtype)


def _circle(turns: Tensor, length: int, inverse: bool, dtype: DType) -> Tensor:
    """exp(-+i pi turns / length) as `dtype`, exactly 1, -i, -1 or i at a quarter turn (as
    pocketfft's twiddles: a real signal's Nyquist term then has no imaginary part, where
    sin(pi) rounded to 1.2e-16 gave it one, and a phase of -pi instead of torch's pi)."""
    sign = 1.0 if inverse else -1.0
    angle = turns * (sign * math.pi / length)
    z = cx.polar(factories.ones_like(angle), angle)
    # quarter turns 4 turns / (2 length), told in integers (turns hold whole numbers, length
    # a whole or half one): a float quotient is not exact (196 * (2 / 196) != 2)
    scaled, unit = turns * 4.0, float(round(2 * length))
    exact = scaled.remainder(unit).eq(0.0)
    q = scaled.div(unit, rounding_mode="floor").remainder(4.0).to(int64)  # 0 to 3
    parts = cx.view_as_real(z)
    for k, values in enumerate(((1.0, 0.0, -1.0, 0.0), (0.0, sign, 0.0, -sign))):  # cos, sin
        table = factories.tensor(values, dtype=float64, device=turns.device)
        parts[..., k].copy_(ew.where(exact, table[q], parts[..., k]))
    return z.to(dtype)


# ---- the complex transform along the last dim ---------------------------------------------------


def _empty(like: Tensor, shape: tuple[int, ...]) -> Tensor:
    return Tensor(empty_impl(shape, like.dtype, like.device))


def _odd_part(n: int) -> tuple[int, int]:
    """(P, m) with n = P 2^m, P odd."""
    m = (n & -n).bit_length() - 1
    return n >> m, m


def _transform(x: Tensor, inverse: bool) -> Tensor:
    """The unnormalized DFT of complex x along its last dim (inverse: conjugate twiddles)."""
    n = x.shape[-1]
    if n == 1:
        return x.clone()
    odd, _ = _odd_part(n)
    if odd > _ODD_DIRECT:
        return _bluestein(x, inverse)
    base = odd
    while base * 2 <= _DIRECT and n % (base * 2) == 0:
        base *= 2
    cols = n // base
    batch = x.shape[:-1]
    # phases[..., c, r] = x[..., r cols + c]: the subsequences of stride `cols` as rows of
    # one tall matrix, so their DFTs are one product with the (symmetric) DFT matrix;
    # out[..., c, k] is then the k-th output of phase c's transform, k contiguous
    phases = x.reshape(*batch, base, cols).transpose(-1, -2).contiguous()
    pairs = cx.view_as_real(phases).reshape(-1, 2 * base)  # (re, im) pairs per row
    if cols == 1:
        product = matmul(pairs, _table("dft_real", base, inverse, x.dtype, x.device))
        return cx.view_as_complex(product.reshape(*batch, n, 2))
    # the stages run on planar parts (real and imaginary arrays apart): every read and
    # write is then unit-stride along k, where the interleaved pairs would be stride 2;
    # the planar table's product holds each row's real parts, then its imaginary ones
    product = matmul(pairs, _table("dft_planar", base, inverse, x.dtype, x.device))
    planar = product.reshape(*batch, cols, 2, base)
    re, im = planar[..., 0, :], planar[..., 1, :]
    rows = base
    while cols > 1:  # merge phases c and c + cols / 2: transforms of twice the length
        half = cols // 2
        twiddle = _table("twiddle", rows, inverse, x.dtype, x.device)
        new_re, new_im = (_empty(re, (*batch, half, 2 * rows)) for _ in range(2))
        formula.launch_many(
            ("fft_stage",),
            [re[..., :half, :], im[..., :half, :], re[..., half:, :], im[..., half:, :],
             cx.real(twiddle), cx.imag(twiddle)],
            re.dtype,
            _butterfly,
            [new_re[..., :rows], new_im[..., :rows], new_re[..., rows:], new_im[..., rows:]],
        )  # fmt: skip
        re, im, rows, cols = new_re, new_im, 2 * rows, half
    return cx.complex(re, im).reshape(*batch, n)


def _butterfly(er, ei, odd_re, odd_im, wr, wi):
    """A radix-2 stage on planar parts: even +- twiddle * odd (the top and bottom halves)."""
    tr, ti = odd_re * wr - odd_im * wi, odd_re * wi + odd_im * wr
    return er + tr, ei + ti, er - tr, ei - ti


def _bluestein(x: Tensor, inverse: bool) -> Tensor:
    """Bluestein's chirp-z: X_k = w_k sum_n (x_n w_n) conj(w_(k-n)), w_n = exp(-i pi n^2 / N),
    the sum a circular convolution of power-of-two length M >= 2N - 1."""
    n = x.shape[-1]
    size = 1 << (2 * n - 2).bit_length()
    chirp = _table("chirp", n, inverse, x.dtype, x.device)
    spectrum = _transform(_resized(x * chirp, size), False)
    spectrum *= _table("bluestein", n, inverse, x.dtype, x.device)
    conv = _transform(spectrum, True)[..., :n] / size
    return chirp * conv


# ---- arguments ----------------------------------------------------------------------------------


def _as_complex(x: Tensor, op: str) -> Tensor:
    """x as the complex dtype its transform computes in: complex stays, real inputs become
    the complex counterpart of _real_input's float dtype."""
    return (
        x
        if x.dtype.is_complex
        else _real_input(x, op).to(
            x.dtype.to_complex() if x.dtype.is_floating_point else get_default_dtype().to_complex()
        )
    )


def _real_input(x: Tensor, op: str) -> Tensor:
    """A real input as the float dtype its transform computes in: float32 and float64
    stay, integers and bool take the default dtype; complex and half inputs are refused."""
    if x.dtype.is_complex:
        raise TypeError(f"{op} expects a real input tensor, but got {x.dtype}")
    if x.dtype.is_half:
        raise TypeError(f"{op}: Unsupported dtype {x.dtype}: kael's FFT takes float32 and float64")
    return x if x.dtype.is_floating_point else x.to(get_default_dtype())


def _norm_arg(norm, op: str) -> str:
    norm = "backward" if norm is None else norm
    if norm not in NORMS:
        raise ValueError(f'{op}: Invalid normalization mode: "{norm}"')
    return norm


def _scale(x: Tensor, norm: str, n: int, inverse: bool) -> Tensor:
    """The normalization: 1/n on the inverse ("backward"), on the forward ("forward"), or
    1/sqrt(n) on both ("ortho")."""
    if norm == "ortho":
        return x.mul_(1.0 / math.sqrt(n))
    if (norm == "backward") == inverse:
        return x.mul_(1.0 / n)
    return x


def _resized(x: Tensor, n: int) -> Tensor:
    """x along its last dim trimmed or zero-padded to n."""
    size = x.shape[-1]
    if n == size:
        return x
    if n < size:
        return x[..., :n]
    out = _empty(x, (*x.shape[:-1], n)).fill_(0)
    out[..., :size] = x
    return out


def _length(n, size: int, op: str) -> int:
    n = size if n is None else views.as_int(n, "n")
    if n < 1:
        raise ValueError(f"{op}: Invalid number of data points ({n}) specified")
    return n


def _along(x: Tensor, dim: int, fn) -> Tensor:
    """fn applied with `dim` moved last, moved back after."""
    last = x.ndim - 1
    if dim == last:
        return fn(x)
    return fn(x.movedim(dim, last)).movedim(last, dim)


def _dim(x: Tensor, dim, op: str) -> int:
    if x.ndim == 0:
        raise ValueError(f"{op}: expected a tensor of at least 1 dimension, got a 0-d tensor")
    return views.wrap_dim(dim, x.ndim)


# ---- the public transforms ----------------------------------------------------------------------


def _c2c_along(x: Tensor, n, dim, norm, inverse: bool, op: str) -> Tensor:
    """The complex transform of complex x along one dim, on n points, normalized."""
    d = _dim(x, dim, op)
    length = _length(n, x.shape[d], op)
    mode = _norm_arg(norm, op)

    def one(t: Tensor) -> Tensor:
        return _scale(_transform(_resized(t, length), inverse), mode, length, inverse)

    return _along(x, d, one)


def _c2c(op: str, inverse: bool):
    def transform(input, n=None, dim=-1, norm=None, *, out=None) -> Tensor:
        given = tensor_arg(input, op)
        result = _c2c_along(_as_complex(given, op), n, dim, norm, inverse, op)
        if not given.dtype.is_complex:
            _real_terms(result, dim, -0.0 if inverse else 0.0)
        return _written(result, out, op)

    transform.__name__ = op
    transform.__doc__ = f"torch.fft.{op}: the {'inverse ' if inverse else ''}DFT along dim."
    return transform


def _written(result: Tensor, out, op: str) -> Tensor:
    """result, or result written into out as torch's out= does: out must be complex for a
    complex result and floating point for a real one (either precision: copy_ casts), and
    is resized to the result's shape (outputs.output)."""
    if out is None:
        return result
    kind = tensor_arg(out, op, "out").dtype
    if not (kind.is_complex if result.dtype.is_complex else kind.is_floating_point):
        wanted = "complex" if result.dtype.is_complex else "floating point"
        raise TypeError(f"{op} expects a {wanted} output tensor, but got {kind}")
    return output(out, result.shape, kind, result.device, op).copy_(result)


def _real_terms(spectrum: Tensor, dim, zero: float) -> None:
    """The DC and Nyquist terms of a real signal's spectrum made exactly real, as torch's
    real-input transforms give them (a Bluestein length's rounding left ~1e-13 there): an
    imaginary part of `zero` (torch's inverse conjugates its forward one: -0.0)."""
    d = views.wrap_dim(dim, spectrum.ndim)
    n = spectrum.shape[d]
    parts = cx.imag(spectrum)
    for k in (0, n // 2) if n % 2 == 0 else (0,):
        parts.select(d, k).fill_(zero)


fft = _c2c("fft", False)
ifft = _c2c("ifft", True)


def rfft(input, n=None, dim=-1, norm=None, *, out=None) -> Tensor:
    """torch.fft.rfft: the DFT of a real signal, its first n // 2 + 1 (non-redundant) outputs.
    An even n transforms the signal's pairs as n / 2 complex points and untangles them
    (half the work of a complex transform of n points); an odd n takes the complex one."""
    real = _real_input(tensor_arg(input, "rfft"), "rfft")
    d = _dim(real, dim, "rfft")
    length = _length(n, real.shape[d], "rfft")
    mode = _norm_arg(norm, "rfft")

    def half(t: Tensor) -> Tensor:
        return _scale(_half_spectrum(_resized(t, length)), mode, length, False)

    return _written(_along(real, d, half), out, "rfft")


def _half_spectrum(t: Tensor) -> Tensor:
    """The unnormalized first n // 2 + 1 DFT outputs of real t (n its last dim, >= 1)."""
    length = t.shape[-1]
    if length % 2:
        return _transform(t.to(t.dtype.to_complex()), False)[..., : length // 2 + 1].contiguous()
    return _untangled(_transform(_pairs(t), False), length)


def _pairs(t: Tensor) -> Tensor:
    """A real signal of even length n as n / 2 complex points x[2k] + i x[2k + 1]."""
    pairs = t.contiguous()
    return cx.view_as_complex(pairs.reshape(*pairs.shape[:-1], pairs.shape[-1] // 2, 2))


def _untangled(z: Tensor, length: int) -> Tensor:
    """The half spectrum X_0..X_(n/2) of a real signal from Z, the transform of its pairs:
    with A_k = Z_(k mod m) and B_k = conj(Z_((m - k) mod m)), m = n / 2,
    X_k = (A + B) / 2 - i w_k (A - B) / 2, w_k = exp(-2 pi i k / n)."""
    first = z[..., :1]
    a = cx.cat_last([z, first])
    b = cx.cat_last([first, z[..., 1:].flip(-1), first])
    w = _table("rfft", length, False, z.dtype, z.device)

    def untangle(ar, ai, br, bi, wr, wi):
        er, ei = (ar + br) * 0.5, (ai - bi) * 0.5  # (A + conj B') / 2, B' = Z_(m - k)
        orr, oi = (ar - br) * 0.5, (ai + bi) * 0.5  # (A - conj B') / 2
        return er + (wr * oi + wi * orr), ei - (wr * orr - wi * oi)

    return cx.elementwise("rfft_untangle", [a, b, w], z.dtype, untangle, a.shape, z.device)


def _hermitian(t: Tensor, length: int) -> Tensor:
    """The full spectrum of `length` whose first length // 2 + 1 entries are t's (trimmed or
    zero-padded), the rest their mirrored conjugates."""
    kept = length // 2 + 1
    head = _resized(t, kept)
    tail = head[..., 1 : (length + 1) // 2].conj().flip(-1)
    from kael.frontend.index_ops import cat

    return cat([head, tail], -1)


def _real_signal(t: Tensor, length: int) -> Tensor:
    """The unnormalized inverse DFT (times `length`) of the Hermitian spectrum whose first
    half is t, a real signal of `length`. An even length inverts rfft's untangling: with
    m = length / 2, A_k = X_k and B_k = conj(X_(m - k)), the pairs' spectrum is
    Z_k = (A + B) / 2 + i w_k^-1 (A - B) / 2, one complex transform of m points; the DC
    and Nyquist terms' imaginary parts are ignored (as PyTorch's c2r transforms)."""
    if length % 2:
        return cx.real(_transform(_hermitian(t, length), True)).contiguous()
    half = length // 2
    spectrum = _resized(t, half + 1).clone()
    edges = cx.imag(spectrum)
    edges[..., 0] = 0.0
    edges[..., half] = 0.0
    a = spectrum[..., :half]
    b = spectrum[..., 1:].flip(-1)  # X_(m - k), k < m; conjugated in the formula
    w = _table("irfft", length, False, t.dtype, t.device)

    def tangle(ar, ai, br, bi, wr, wi):
        er, ei = (ar + br) * 0.5, (ai - bi) * 0.5  # (A + conj B') / 2
        dr, di = (ar - br) * 0.5, (ai + bi) * 0.5  # (A - conj B') / 2
        orr, oi = dr * wr - di * wi, dr * wi + di * wr  # times the table, w_k^-1 ...
        return er - oi, ei + orr  # ... then E + i O

    pairs = cx.elementwise("irfft_tangle", [a, b, w], t.dtype, tangle, a.shape, t.device)
    z = _transform(pairs, True)
    return cx.view_as_real(z).reshape(*z.shape[:-1], length).mul_(2.0)


def irfft(input, n=None, dim=-1, norm=None, *, out=None) -> Tensor:
    """torch.fft.irfft: the real signal of length n (default 2 (m - 1)) whose half spectrum
    (m entries along dim) is input; the imaginary parts of the DC and Nyquist terms are
    ignored, as PyTorch's."""
    x = _as_complex(tensor_arg(input, "irfft"), "irfft")
    d = _dim(x, dim, "irfft")
    length = _length(n if n is not None else 2 * (x.shape[d] - 1), 1, "irfft")
    mode = _norm_arg(norm, "irfft")

    def signal(t: Tensor) -> Tensor:
        return _scale(_real_signal(t, length), mode, length, True)

    return _written(_along(x, d, signal), out, "irfft")


def hfft(input, n=None, dim=-1, norm=None, *, out=None) -> Tensor:
    """torch.fft.hfft: the real DFT of a signal with Hermitian symmetry given by its first
    half (the forward transform of irfft's input form)."""
    x = _as_complex(tensor_arg(input, "hfft"), "hfft")
    d = _dim(x, dim, "hfft")
    length = _length(n if n is not None else 2 * (x.shape[d] - 1), 1, "hfft")
    mode = _norm_arg(norm, "hfft")

    def signal(t: Tensor) -> Tensor:
        return _scale(_real_signal(t.conj(), length), mode, length, False)

    return _written(_along(x, d, signal), out, "hfft")


def ihfft(input, n=None, dim=-1, norm=None, *, out=None) -> Tensor:
    """torch.fft.ihfft: the inverse of hfft, the half spectrum of a real signal's inverse DFT."""
    x = _real_input(tensor_arg(input, "ihfft"), "ihfft")
    d = _dim(x, dim, "ihfft")
    length = _length(n, x.shape[d], "ihfft")
    mode = _norm_arg(norm, "ihfft")

    def half(t: Tensor) -> Tensor:  # the inverse DFT of a real signal: the conjugate
        return _scale(_half_spectrum(_resized(t, length)).conj(), mode, length, True)

    return _written(_along(x, d, half), out, "ihfft")


# ---- several dims -------------------------------------------------------------------------------

_TWO_D = (-2, -1)  # the 2-d forms' default dims
_SWAPPED = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _dims_and_sizes(x: Tensor, s, dim, op: str) -> tuple[list[int], list[int | None]]:
    """The dims transformed (dim, else the last len(s), else all) and their lengths (None
    where s is not given or says -1: the input's size, or c2r's default length). An int s
    is one length, as torch's parser reads it."""
    if isinstance(s, int) and not isinstance(s, bool):
        s = (s,)
    if s is not None and dim is None and len(s) > x.ndim:
        raise ValueError(
            f"{op}: Got shape with {len(s)} values but input tensor only has {x.ndim} dimensions."
        )
    if dim is None:
        dims = list(range(x.ndim - (x.ndim if s is None else len(s)), x.ndim))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
    dims = [views.wrap_dim(d, x.ndim) for d in dims]
    if len(set(dims)) != len(dims):
        raise ValueError(f"{op}: FFT dims must be unique, got {tuple(dims)}")
    sizes = [None] * len(dims) if s is None else [views.as_int(v, "s") for v in s]
    if len(sizes) != len(dims):
        raise ValueError(
            f"{op}: When given, dim and shape arguments must have the same length, got s of"
            f" length {len(sizes)} and {len(dims)} dims"
        )
    return dims, [None if n == -1 else n for n in sizes]


def _at_least_one(dims: list[int], op: str) -> None:
    if not dims:
        raise ValueError(f"{op} must transform at least one axis")


def _laid_out(result: Tensor, given: Tensor, dims: list[int], last: int | None = None) -> Tensor:
    """`result` of a transform over `dims` of `given` in torch's layout (its pocketfft and
    MKL plans'): the other dims outermost, then the transformed ones, each group in the
    order of given's strides (row-major for a contiguous input), and a real transform's
    halved or restored dim `last` innermost. One copy where the 1-d passes left another."""
    impl = given._impl
    strides = impl.strides if is_non_overlapping_and_dense(impl) else contiguous_strides(impl.shape)
    outer_first = sorted(range(len(strides)), key=lambda d: -strides[d])  # stable: ties by dim
    order = [d for d in outer_first if d not in dims] + [
        d for d in outer_first if d in dims and d != last
    ]
    order += [] if last is None else [last]
    wanted = tuple(strides_in_order(result.shape, order[::-1], 1))
    if result._impl.strides == wanted:
        return result
    return Tensor(copy_with(result._impl, wanted))


def _c2c_dims(inverse: bool):
    def body(x: Tensor, dims: list[int], sizes: list, norm: str, op: str) -> Tensor:
        given = x
        x = _as_complex(x, op)
        if not dims:  # no transform: a new tensor all the same, as torch's
            return x.clone()
        for d, n in zip(dims, sizes):
            x = _c2c_along(x, n, d, norm, inverse, op)
        return _laid_out(x, given, dims)

    return body


def _r2c_dims(x: Tensor, dims: list[int], sizes: list, norm: str, op: str) -> Tensor:
    """rfft over the last of the dims, fft over the others."""
    real = _real_input(x, op)
    _at_least_one(dims, op)
    y = rfft(real, sizes[-1], dims[-1], norm)
    for d, n in zip(dims[:-1], sizes[:-1]):
        y = _c2c_along(y, n, d, norm, False, op)
    return _laid_out(y, x, dims, dims[-1])


def _c2r_dims(x: Tensor, dims: list[int], sizes: list, norm: str, op: str) -> Tensor:
    """ifft over all but the last of the dims, irfft there."""
    y = _as_complex(x, op)
    _at_least_one(dims, op)
    for d, n in zip(dims[:-1], sizes[:-1]):
        y = _c2c_along(y, n, d, norm, True, op)
    return _laid_out(irfft(y, sizes[-1], dims[-1], norm), x, dims, dims[-1])


def _hfft_dims(x: Tensor, dims: list[int], sizes: list, norm: str, op: str) -> Tensor:
    """hfftn: the forward transform of a Hermitian signal, irfftn of its conjugate with the
    normalization on the other side (conj(F x) = conj(F) conj(x) = F^-1 conj(x) unscaled)."""
    return _c2r_dims(_as_complex(x, op).conj(), dims, sizes, _SWAPPED[norm], op)


def _ihfft_dims(x: Tensor, dims: list[int], sizes: list, norm: str, op: str) -> Tensor:
    """ihfftn: the conjugate of rfftn with the normalization on the other side, laid out
    as torch's rfft over the last dim, then its fft over the others, leave it."""
    real = _real_input(x, op)
    _at_least_one(dims, op)
    half = rfft(real, sizes[-1], dims[-1], _SWAPPED[norm])
    return _C2C(half, dims[:-1], sizes[:-1], _SWAPPED[norm], op).conj() if dims[1:] else half.conj()


def _n_dim(op: str, default_dim, body, doc: str):
    """The public form of a transform over several dims: torch's s, dim, norm and out."""

    def transform(input, s=None, dim=default_dim, norm=None, *, out=None) -> Tensor:
        if dim is None and default_dim is not None:
            raise TypeError(f"{op}(): argument 'dim' must be tuple of ints, not NoneType")
        x = tensor_arg(input, op)
        dims, sizes = _dims_and_sizes(x, s, dim, op)
        return _written(body(x, dims, sizes, _norm_arg(norm, op), op), out, op)

    transform.__name__ = op
    transform.__doc__ = f"torch.fft.{op}: {doc}"
    return transform


_C2C, _IC2C = _c2c_dims(False), _c2c_dims(True)
fft2 = _n_dim("fft2", _TWO_D, _C2C, "the DFT over two dims (the last two by default).")
ifft2 = _n_dim("ifft2", _TWO_D, _IC2C, "the inverse DFT over two dims (the last two by default).")
fftn = _n_dim("fftn", None, _C2C, "the DFT over dims (the last len(s), else all, by default).")
ifftn = _n_dim("ifftn", None, _IC2C, "the inverse DFT over dims (the last len(s), else all).")
rfft2 = _n_dim("rfft2", _TWO_D, _r2c_dims, "rfft over the last of two dims, fft over the other.")
rfftn = _n_dim("rfftn", None, _r2c_dims, "rfft over the last of the dims, fft over the others.")
irfft2 = _n_dim("irfft2", _TWO_D, _c2r_dims, "ifft over the first of two dims, irfft the last.")
irfftn = _n_dim("irfftn", None, _c2r_dims, "ifft over all but the last of the dims, irfft there.")
hfft2 = _n_dim("hfft2", _TWO_D, _hfft_dims, "hfft over two dims: a Hermitian signal's real DFT.")
hfftn = _n_dim("hfftn", None, _hfft_dims, "hfft over dims: the real DFT of a Hermitian signal.")
ihfft2 = _n_dim("ihfft2", _TWO_D, _ihfft_dims, "ihfft over two dims: hfft2's inverse, onesided.")
ihfftn = _n_dim("ihfftn", None, _ihfft_dims, "ihfft over dims: hfftn's inverse, onesided.")


# ---- helpers ------------------------------------------------------------------------------------


def _frequency_dtype(dtype, op: str) -> DType:
    dtype = factories.dtype_or(dtype, get_default_dtype())
    if not (dtype.is_floating_point or dtype.is_complex):
        raise TypeError(f"{op} requires a floating point or complex dtype, but got {dtype}")
    return dtype


def _per_sample(k: Tensor, n: int, d, dtype: DType) -> Tensor:
    """k (an arange in dtype's real part) times 1 / (n d) rounded to it first, as torch's
    mul_ by that Scalar (not a division: the two round differently); 1 / 0 is inf, as in
    C++."""
    span = n * d
    step = 1.0 / span if span else math.copysign(math.inf, span)
    return (k * factories.scalar_tensor(step, dtype=k.dtype, device=k.device)).to(dtype)


def fftfreq(n, d=1.0, *, dtype=None, device=None) -> Tensor:
    """The sample frequencies of an n-point DFT: [0, 1, ..., -(n // 2), ..., -1] / (d n),
    the negative ones an arange of their own, as torch's."""
    n = views.as_int(n, "n")
    dtype = _frequency_dtype(dtype, "fftfreq")
    k = factories.arange(n, dtype=dtype.to_real(), device=device)
    k[(n + 1) // 2 :] = factories.arange(-(n // 2), 0, dtype=dtype.to_real(), device=device)
    return _per_sample(k, n, d, dtype)


def rfftfreq(n, d=1.0, *, dtype=None, device=None) -> Tensor:
    """The sample frequencies of rfft's n // 2 + 1 outputs: [0, 1, ..., n // 2] / (d n)."""
    n = views.as_int(n, "n")
    dtype = _frequency_dtype(dtype, "rfftfreq")
    k = factories.arange(n // 2 + 1, dtype=dtype.to_real(), device=device)
    return _per_sample(k, n, d, dtype)


def _shifted(x: Tensor, dim, sign: int) -> Tensor:
    dims: Sequence[int] = range(x.ndim) if dim is None else ([dim] if isinstance(dim, int) else dim)
    if not x.ndim and len(dims):
        raise IndexError(f"Dimension specified as {list(dims)[0]} but tensor has no dimensions")
    dims = [views.wrap_dim(d, x.ndim) for d in dims]
    shifts = [sign * (x.shape[d] // 2) if sign > 0 else -(x.shape[d] // 2) for d in dims]
    return x.roll(shifts, dims)


def fftshift(input, dim=None) -> Tensor:
    """The zero frequency moved to the middle: a roll by n // 2 along each dim."""
    return _shifted(tensor_arg(input, "fftshift"), dim, 1)


def ifftshift(input, dim=None) -> Tensor:
    """fftshift's inverse: a roll by -(n // 2) along each dim."""
    return _shifted(tensor_arg(input, "ifftshift"), dim, -1)


FUNCTIONS = {
    "fft": fft, "ifft": ifft, "rfft": rfft, "irfft": irfft, "hfft": hfft, "ihfft": ihfft,
    "fft2": fft2, "ifft2": ifft2, "fftn": fftn, "ifftn": ifftn, "rfft2": rfft2,
    "irfft2": irfft2, "rfftn": rfftn, "irfftn": irfftn, "hfft2": hfft2, "ihfft2": ihfft2,
    "hfftn": hfftn, "ihfftn": ihfftn, "fftfreq": with_out(fftfreq, "fftfreq", creation=True),
    "rfftfreq": with_out(rfftfreq, "rfftfreq", creation=True), "fftshift": fftshift,
    "ifftshift": ifftshift,
}  # fmt: skip
