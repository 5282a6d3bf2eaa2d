"""A hypothesis differential fuzzer: random chains of 1-4 of kael's public ops over random
tensors (float32, float64, int64, bool; ranks 0-4 with sizes 0, 1 and small; contiguous,
permuted, stepped, broadcast and offset layouts; NaN, infinities, -0.0, extremes), run
on kael and on torch from the same bytes (tests/fuzz_ops.py has the strategies and the
op table, eleven families drawn evenly).

The rule, checked after every op of a chain: where torch answers, kael gives the same
type, shape, dtype and values (exact for int64 and bool, NaN equal to NaN, zeros of
torch's sign for the ops IEEE fixes it for, float32 within rtol 1e-5 / atol 1e-6 and
float64 within 1e-12 / 1e-14), view ops alias their input as torch's do, and every
tensor the chain has made or read holds the same values in both libraries (so an
in-place op writes exactly what torch writes, and no op writes anything else). Where
torch raises, kael raises a kael.Error (kael.IndexError, ValueError, TypeError), never
another exception, and an in-place op that raises leaves its operands as torch leaves
them. A float result within tolerance is then overwritten with torch's bits, so each op
of a chain reads the same input in both libraries and rounding differences cannot grow
along the chain into false alarms.

KAEL_QUIRKS lists the deliberate, documented differences from torch, and torch's own
order-dependent answers (each checked against torch's answer to the equivalent call, or
a more exact one, where there is one); KNOWN_OPEN names the classes of OPEN_CLASSES, the
failures found and reported but not fixed yet (empty it to see them fail).

Budget: CI runs a fixed, derandomized sample of KAEL_FUZZ_EXAMPLES (1000) chains, half
of them free, half starting with each op of the table in turn (database off, no
deadline). By hand:

    KAEL_FUZZ_EXAMPLES=5000 python -m pytest -q tests/frontend/test_fuzz.py

runs more examples; KAEL_FUZZ_SEED=N draws a different sample; KAEL_FUZZ_REPORT=path
records each failure (its kind and a repro that runs with L = kael and L = torch) as a
JSON line in `path` instead of stopping at the first, so one long run collects every
distinct finding; KAEL_FUZZ_STRICT=1 reports KNOWN_OPEN's classes too.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Callable
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import torch
from fuzz_ops import (
    FAMILIES,
    I64_MAX,
    I64_MIN,
    OPS,
    Code,
    Dtype,
    Key,
    Spec,
    budget,
    pick,
    source,
    specs,
)
from hypothesis import event, given, note
from hypothesis import strategies as st
from kernel_helpers import KAEL_DTYPES

import kael
from kael.frontend.tensor import has_internal_overlap

EXAMPLES = int(os.environ.get("KAEL_FUZZ_EXAMPLES", 1000))
SEED = os.environ.get("KAEL_FUZZ_SEED")
REPORT = os.environ.get("KAEL_FUZZ_REPORT")
STRICT = bool(os.environ.get("KAEL_FUZZ_STRICT"))  # report KNOWN_OPEN's classes too
MAX_NUMEL = 4096  # a chain stops once a result grows past this

TOL = {torch.float32: (1e-5, 1e-6), torch.float64: (1e-12, 1e-14)}

pytestmark = pytest.mark.filterwarnings("ignore")


# ---- comparing -------------------------------------------------------------------------------


def value_difference(got: np.ndarray, want: np.ndarray, tol, zero_sign: bool = False):
    """Where two arrays of one shape differ (None if nowhere), as `differing` finds it."""
    bad = differing(got, want, tol, zero_sign)
    if not bad.any():
        return None
    at = tuple(int(i) for i in np.argwhere(bad)[0])
    return f"at {at}: kael {got[at]!r}, torch {want[at]!r} ({int(bad.sum())} differ)"


def differing(got: np.ndarray, want: np.ndarray, tol, zero_sign: bool = False) -> np.ndarray:
    """The positions where two arrays differ: exact for ints and bools; for floats NaN
    matches NaN, infinities match exactly, finite values within (rtol, atol), and with
    `zero_sign` a zero must have the other's sign."""
    if tol is None:
        bad = got != want
    else:
        rtol, atol = tol
        g, w = got.astype(np.float64), want.astype(np.float64)
        nan_g, nan_w = np.isnan(g), np.isnan(w)
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.abs(g - w) <= atol + rtol * np.abs(w)
        exact = np.isinf(g) | np.isinf(w)
        bad = (nan_g != nan_w) | (~nan_g & ~nan_w & np.where(exact, g != w, ~close))
        if zero_sign:
            bad |= (g == 0) & (w == 0) & (np.signbit(g) != np.signbit(w))
    return np.asarray(bad)


def difference(got, want, zero_sign: bool = False) -> str | None:
    """How kael's result differs from torch's (None when they agree): tensors by type,
    shape, dtype and values; tuples item by item; Python numbers by type and value."""
    if isinstance(want, torch.Tensor):
        if not isinstance(got, kael.Tensor):
            return f"kael gives {type(got).__name__}, torch a tensor"
        if got.shape != tuple(want.shape):
            return f"shape {got.shape}, torch {tuple(want.shape)}"
        if KAEL_DTYPES.get(want.dtype) is not got.dtype:
            return f"dtype {got.dtype}, torch {want.dtype}"
        return value_difference(got.numpy(), want.numpy(), TOL.get(want.dtype), zero_sign)
    if isinstance(want, tuple | list):
        if not isinstance(got, tuple | list) or len(got) != len(want):
            return f"kael gives {type(got).__name__}, torch {type(want).__name__} of {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            diff = difference(g, w, zero_sign)
            if diff:
                return f"item {i}: {diff}"
        return None
    if type(got) is not type(want):
        return f"kael gives {type(got).__name__} {got!r}, torch {type(want).__name__} {want!r}"
    if isinstance(want, float):
        same = (math.isnan(got) and math.isnan(want)) or math.isclose(got, want, rel_tol=1e-5)
        return None if same else f"kael {got!r}, torch {want!r}"
    return None if got == want else f"kael {got!r}, torch {want!r}"


def tensors_in(value) -> list:
    """The tensors of a result (a tensor, or a tuple or list of them)."""
    if isinstance(value, kael.Tensor | torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for v in value for t in tensors_in(v)]
    return []


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two torch tensors hold equal values (NaN equal to NaN): unchanged by an op."""
    return np.array_equal(a.numpy(), b.numpy(), equal_nan=a.dtype.is_floating_point)


def mapped(ns: dict, fn: Callable) -> dict:
    """ns with fn applied to every torch tensor (also inside tuples and lists)."""

    def one(v):
        if isinstance(v, torch.Tensor):
            return fn(v)
        if isinstance(v, tuple | list):
            return type(v)(one(x) for x in v)
        return v

    return {k: one(v) for k, v in ns.items()}


def _is_number(x) -> bool:
    """Whether x is a Python number (bool, int or float)."""
    return isinstance(x, bool | int | float)


# ---- one op of a chain -----------------------------------------------------------------------


class StopChain(Exception):
    """The chain ends here: both raised, a non-tensor result, or a documented difference."""


class Step:
    """One op on both libraries: its arguments, namespaces, outcomes and the checks'
    findings so far."""

    def __init__(self, chain, name: str, args: dict, xname: str, kx, tx):
        self.chain, self.name, self.op, self.args = chain, name, OPS[name], args
        self.kx, self.tx = kx, tx
        fields = {"x": xname, **{k: chain.render(v, xname) for k, v in args.items()}}
        self.out_name = xname if self.op.stmt else chain.name("x")
        line = self.op.code.format(**fields)
        chain.lines.append(line if self.op.stmt else f"{self.out_name} = {line}")
        source = self.op.code.format(**{k: k for k in fields})
        self.code = compile(source, name, "exec" if self.op.stmt else "eval")
        self.kns, self.tns = {"L": kael, "x": kx}, {"L": torch, "x": tx}
        for key, value in args.items():
            self.kns[key], self.tns[key] = chain.materialize(value, kx, tx)
        self.upcast = upcast(self.tns)  # torch's more exact answer, before any write
        if self.op.inplace:  # what an oracle restores after torch's failed attempt
            self.x_before = tx.clone()
            self.code_before = {k: self.tns[k].clone() for k, v in args.items() if type(v) is Code}

    def torch_tensors(self, dtype=None) -> list:
        found = tensors_in(list(self.tns.values()))
        return [t for t in found if dtype is None or t.dtype is dtype]

    def run(self, ns: dict):
        """(result, None) or (None, the exception raised); a statement's result is x."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if self.op.stmt:
                    exec(self.code, ns)
                    return ns["x"], None
                return eval(self.code, ns), None
        except Exception as e:  # any exception is an outcome to compare
            return None, e

    def scalars(self) -> list:
        """The Python numbers among the arguments (dims and shifts too; not index keys)."""
        out = []
        for v in self.args.values():
            if not isinstance(v, Key):
                out += [x for x in (v if isinstance(v, tuple | list) else [v]) if _is_number(x)]
        return out

    def fail(self, kind: str, detail: str) -> None:
        """Raise the finding (or, with KAEL_FUZZ_REPORT, record it and end the chain), unless
        it belongs to a class of KNOWN_OPEN."""
        classes = [
            name
            for name, (_, kinds, applies) in OPEN_CLASSES.items()
            if kind in kinds.split("|") and applies(self)
        ]
        for name in classes:
            if name in KNOWN_OPEN:
                event(f"known open: {name}")
                raise StopChain
        tx = self.tx
        message = f"{kind}: {self.name} on {tx.dtype} {tuple(tx.shape)}: {detail}"
        if REPORT:
            record = {
                "signature": f"{self.name}|{kind}|{tx.dtype}",
                "open": classes,
                "message": message,
                "repro": "\n".join(self.chain.lines),
            }
            with open(REPORT, "a") as f:
                f.write(json.dumps(record) + "\n")
            raise StopChain
        raise AssertionError(message)  # the test notes the chain's repro


# ---- deliberate differences and open failures ------------------------------------------------


def _bools(step: Step) -> bool:
    """Whether x and the other operand y are both bool (a tensor or a Python bool)."""
    return all(
        isinstance(v, bool) or (isinstance(v, torch.Tensor) and v.dtype is torch.bool)
        for v in (step.tx, step.tns.get("y"))
    )


def _bool_add(step: Step) -> bool:
    """An add (function, operator or in place) of two bools."""
    base = step.name.removeprefix("op_").removesuffix("_reflected")
    return base in ("add", "radd", "iadd", "add_") and _bools(step)


def _floats(step: Step) -> np.ndarray:
    """Every finite float of the op's tensor inputs, as float64."""
    arrays = [t.double().reshape(-1).numpy() for t in step.torch_tensors()]
    found = np.concatenate(arrays) if arrays else np.zeros(0)
    return found[np.isfinite(found)]


MATMULS = {"matmul", "op_matmul", "op_rmatmul", "mm", "bmm", "dot", "outer", "matmul_self"}
SOFTMAX_FAMILY = {"softmax", "log_softmax", "layer_norm", "cross_entropy"}


def _checked_without_work(step: Step) -> bool:
    """kael raised a typed error for a dtype, index or shape argument of an op with nothing
    to compute (an empty operand or result; a scan of a 0-d tensor)."""
    if not isinstance(step.kerr, kael.TypeError | kael.IndexError | kael.ValueError):
        return False
    if step.name.startswith("cum") and step.tx.ndim == 0:
        return True
    checked = step.op.inplace or any(k in step.args for k in ("i", "src", "key", "dt", "t", "s"))
    results = tensors_in(step.want)
    empty = any(not t.numel() for t in step.torch_tensors() + results[:1])
    return checked and empty


def _promoted(step: Step) -> dict:
    """The namespace with every tensor in the promoted dtype of x and y."""
    both = [t for t in (step.tns["x"], step.tns.get("y")) if isinstance(t, torch.Tensor)]
    dtype = torch.promote_types(both[0].dtype, both[-1].dtype)
    return mapped(step.tns, lambda t: t.to(dtype))


def book_int64(t: torch.Tensor) -> torch.Tensor:
    """The book's float -> int64 conversion, written out: truncate, saturate, NaN to 0."""
    a = t.double().numpy()
    with np.errstate(invalid="ignore"):
        out = np.where(a >= 2.0**63, I64_MAX, np.where(a < -(2.0**63), I64_MIN, 0)).astype(np.int64)
        inside = (a >= -(2.0**63)) & (a < 2.0**63)  # -2**63 itself is INT64_MIN
        out[inside] = np.trunc(a[inside]).astype(np.int64)
    return torch.from_numpy(out)


def _unconvertible_float(step: Step) -> bool:
    """A float input that int64 cannot hold (NaN, infinite, beyond 2**63), in an op whose
    result is int64."""
    if not any(k.dtype is kael.int64 for k in tensors_in(step.got)):
        return False
    scalars = [v for v in step.scalars() if isinstance(v, float)]
    floats = [t.double() for t in step.torch_tensors() if t.dtype.is_floating_point]
    values = np.concatenate([np.asarray(scalars)] + [t.reshape(-1).numpy() for t in floats])
    return bool((~(np.abs(values) < 2.0**63)).any())


def _as_int64(step: Step) -> dict:
    """The namespace with every float (tensor or number) converted to int64 by the book."""
    ns = mapped(step.tns, lambda t: book_int64(t) if t.dtype.is_floating_point else t)
    return {k: _saturated(v) if isinstance(v, float) else v for k, v in ns.items()}


def _saturated(v: float) -> int:
    """The book's float -> int64 for one number."""
    return int(book_int64(torch.tensor([v], dtype=torch.float64))[0])


FILLS = {"fill_", "masked_fill", "masked_fill_", "setitem", "where", "where_scalar",
         "where_method", "clamp", "clamp_"}  # fmt: skip


def _fill_values(step: Step) -> dict:
    """The numbers a fill, select or clamp op stores (a 0-d tensor's item too), by name."""
    found = {}
    for key in ("v", "y", "lo", "hi"):
        v = step.tns.get(key)
        if isinstance(v, torch.Tensor) and v.ndim == 0 and v.dtype.is_floating_point:
            found[key] = v.item()
        elif isinstance(v, float):
            found[key] = v
    return found if step.name in FILLS else {}


def _scalar_target(step: Step):
    """The dtype a fill value is stored in: x's, or the result's for where and clamp."""
    if step.name.startswith("where") and "y" in step.tns:
        return torch.result_type(step.tx, step.tns["y"])
    if step.name.startswith("clamp"):
        bounds = [v for v in (step.tns["lo"], step.tns["hi"]) if v is not None]
        if not all(isinstance(v, torch.Tensor) for v in bounds):  # the Number overload reads
            bounds = [v.item() if isinstance(v, torch.Tensor) else v for v in bounds]  # a 0-d one
        return step.tx.dtype if step.op.inplace else _result_type(step.tx, *bounds)
    return step.tx.dtype


def _result_type(*operands):
    """torch's promotion over tensors and Python numbers."""
    dtype = operands[0].dtype
    for other in operands[1:]:
        dtype = torch.promote_types(dtype, torch.result_type(operands[0].to(dtype), other))
    return dtype


def _unstorable(v: float, target) -> bool:
    """Whether torch refuses to store v in `target` (int64: NaN or beyond; float32: finite
    but beyond its largest value)."""
    if target is torch.int64:
        return not abs(v) < 2.0**63
    return target is torch.float32 and math.isfinite(v) and abs(v) > float(np.finfo("f4").max)


def _overflowing_scalar(step: Step) -> bool:
    """A float value to fill, select or clamp with that the target dtype cannot hold."""
    target = _scalar_target(step)
    return any(_unstorable(v, target) for v in _fill_values(step).values())


def _scalar_stored(step: Step) -> dict:
    """The namespace with each such value replaced by what the book stores for it."""
    target = _scalar_target(step)
    stored = {
        k: _saturated(v) if target is torch.int64 else float(np.float32(v))
        for k, v in _fill_values(step).items()
        if _unstorable(v, target)
    }
    return {**step.tns, **stored}


def _products_overflow(step: Step) -> bool:
    """A float matrix product that differs from torch's only where a product overflowed
    (torch's is NaN or an infinity) or cancelled (huge terms summing to a small value):
    kael's is non-finite there too (operands large enough for a product to overflow) or,
    finite, within a dot product's error bound of the product in extended precision."""
    if step.name not in MATMULS or not isinstance(step.want, torch.Tensor):
        return False
    if not step.want.dtype.is_floating_point or step.got.shape != tuple(step.want.shape):
        return False
    g, w = step.got.numpy(), step.want.numpy()
    tol = TOL[step.want.dtype]
    finite_g, finite_w = np.isfinite(g), np.isfinite(w)
    if (~finite_g & finite_w).any():
        return False
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.abs(g - w) <= tol[1] + tol[0] * np.abs(w)
    check = finite_g & ~(finite_w & close)
    if check.any():  # a dot product's error bound: 2 k eps sum |x y| for k terms
        exact, magnitude = _extended_product(step, np.asarray), _extended_product(step, np.abs)
        k = max((*step.tx.shape, 1))  # at least the number of terms
        bound = 2 * k * np.finfo(g.dtype).eps * magnitude[check] + tol[1]
        return bool((np.abs(g[check] - exact[check]) <= bound).all())
    return np.abs(_floats(step)).max(initial=0.0) ** 2 > np.finfo(w.dtype).max


def _extended_product(step: Step, each: Callable) -> np.ndarray:
    """The op's matrix product of each(operand) in NumPy's long double (x86's 80-bit
    extended: no overflow below 1e4932, 11 more bits of precision)."""
    x = each(step.tx.numpy()).astype(np.longdouble)
    y = each(step.tns["y"].numpy()).astype(np.longdouble) if "y" in step.tns else x.swapaxes(-1, -2)
    with np.errstate(all="ignore"):
        if step.name == "outer":
            return np.multiply.outer(x, y)
        return y @ x if step.name == "op_rmatmul" else x @ y


ORDERED_REDUCTIONS = {"sum", "sum_all", "sum_dtype", "prod", "prod_dtype", "mean", "mean_dtype",
                      "cumsum", "cumprod", "cumsum_", "cumprod_"}  # fmt: skip


def _extremes_reordered(step: Step) -> bool:
    """A float64 sum or product differing only where one library's partials overflowed or
    underflowed (a NaN, an infinity or a zero), over inputs extreme enough for that."""
    tensors = list(zip(tensors_in(step.got), tensors_in(step.want)))
    if step.name not in ORDERED_REDUCTIONS or len(tensors) != 1:
        return False
    k, t = tensors[0]
    if t.dtype is not torch.float64 or k.shape != tuple(t.shape):
        return False
    g, w = k.numpy(), t.numpy()
    odd = ~np.isfinite(g) | ~np.isfinite(w) | (g == 0) | (w == 0)
    if (differing(g, w, TOL[t.dtype]) & ~odd).any():
        return False
    values = np.abs(_floats(step))
    values = values[values > 0]
    info = np.finfo(np.float64)
    return bool(values.size) and (
        values.max() ** 2 > info.max or values.sum() > info.max or values.min() ** 2 < info.tiny
    )


MOMENTS = ("var", "std", "norm", "layer_norm")


def _moment_rows(step: Step) -> np.ndarray | None:
    """The float64 slices x's result elements reduce, one row each in the result's order:
    var's, std's and norm's reduced dims moved last, layer_norm's normalized dims."""
    x = step.tx.double()
    if step.name == "layer_norm":
        return x.reshape(-1, math.prod(step.args["ns"])).numpy()
    if not x.ndim:
        return x.reshape(1, 1).numpy()
    d = step.args["d"]
    dims = [d] if isinstance(d, int) else list(range(x.ndim)) if not d else list(d)
    if any(not -x.ndim <= i < x.ndim for i in dims):
        return None
    last = sorted({i % x.ndim for i in dims})
    rows = x.permute(*[i for i in range(x.ndim) if i not in last], *last)
    return rows.reshape(-1, math.prod(x.shape[i] for i in last)).numpy()


def _exact_moment(step: Step, row: np.ndarray):
    """The exact var, std, norm (rationals, then mpmath at 200 bits) or layer_norm row of
    one finite slice, rounded to float64."""
    xs = [Fraction(float(v)) for v in row]
    n = len(xs)
    if step.name == "norm":
        p = float(step.args["p"])
        if math.isinf(p) or p <= 0:  # the fuzzer draws no p <= 0: NaN explains nothing
            return float(max((abs(v) for v in xs), default=0)) if p > 0 else math.nan
        with mpmath.workprec(200):
            total = mpmath.fsum(abs(mpmath.mpf(v.numerator) / v.denominator) ** p for v in xs)
            return float(total ** (1 / mpmath.mpf(p)))
    mean = sum(xs) / n if n else Fraction(0)
    spread = sum((v - mean) ** 2 for v in xs)
    with mpmath.workprec(200):
        if step.name in ("var", "std"):
            divisor = max(n - step.args["c"], 0)
            if not divisor:
                return math.nan if not spread else math.inf
            var = mpmath.mpf((spread / divisor).numerator) / (spread / divisor).denominator
            return float(mpmath.sqrt(var) if step.name == "std" else var)
        denominator = mpmath.mpf((spread / n).numerator) / (spread / n).denominator
        denominator = mpmath.sqrt(denominator + step.args["eps"])
        w, b = (step.tns[k] for k in ("w", "b"))
        out = []
        for j, v in enumerate(xs):
            y = mpmath.mpf((v - mean).numerator) / (v - mean).denominator
            y = y / denominator if denominator else (math.nan if not y else math.inf)
            y = y * float(w.reshape(-1)[j]) if w is not None else y
            out.append(float(y + float(b.reshape(-1)[j]) if b is not None else y))
        return out


def _moments_exact(step: Step) -> bool:
    """A float64 var, std, norm or layer_norm that differs from torch's only where kael's
    is the exact answer: where torch's sums or squares overflowed (NaN, inf, 0) or its
    mean's rounding shows on data a few ulps wide."""
    if step.name not in MOMENTS or not isinstance(step.want, torch.Tensor):
        return False
    k, t = step.got, step.want
    if t.dtype is not torch.float64 or k.shape != tuple(t.shape) or not t.numel():
        return False
    rows = _moment_rows(step)
    if rows is None or not np.isfinite(rows).all():
        return False
    with np.errstate(all="ignore"):
        exact = np.array([_exact_moment(step, row) for row in rows], np.float64)
    exact = exact.reshape(t.shape)
    g, w = k.numpy(), t.numpy()
    bad = differing(g, w, TOL[t.dtype])
    return not differing(g[bad], exact[bad], TOL[t.dtype]).any()


REMAINDERS = {"remainder": False, "remainder_": False, "op_mod": False, "op_imod": False,
              "remainder_reflected": True, "op_rmod": True}  # name -> operands swapped  # fmt: skip


def _remainder_nan(step: Step) -> bool:
    """A float remainder whose elements differ only where torch gives NaN and kael gives
    Python's (NumPy's) exact remainder: torch's vector loop computes a - b * floor(a / b),
    whose a / b overflows for huge a."""
    if step.name not in REMAINDERS or not isinstance(step.want, torch.Tensor):
        return False
    k, t = step.got, step.want
    if not t.dtype.is_floating_point or k.shape != tuple(t.shape):
        return False
    before = step.x_before if step.op.inplace else step.tx
    y = step.tns["y"]
    if isinstance(y, torch.Tensor):
        y = (step.code_before.get("y", y) if step.op.inplace else y).numpy()
    a, b = (y, before.numpy()) if REMAINDERS[step.name] else (before.numpy(), y)
    dtype = t.numpy().dtype
    with np.errstate(all="ignore"):
        exact = np.broadcast_to(np.remainder(np.asarray(a, dtype), np.asarray(b, dtype)), k.shape)
    g, w = k.numpy(), t.numpy()
    bad = differing(g, w, TOL[t.dtype])
    return bool(np.isnan(w[bad]).all() and not differing(g[bad], exact[bad], TOL[t.dtype]).any())


def _aliased_oracle(step: Step) -> dict:
    """x restored as it was before torch's attempt, and x's aliases as copies."""
    step.tx.copy_(step.x_before)
    return {**step.tns, **step.code_before}


# name -> (reason, kinds of outcome it applies to, predicate, oracle or None). An oracle
# gives the torch call equivalent to kael's (its namespace), whose answer kael's must
# match; without one the chain ends there.
KAEL_QUIRKS: dict[str, tuple[str, str, Callable | None, Callable | None]] = {
    "float32_more_exact": (
        "kael accumulates float32 sums in float64 and multiplies with fused multiply-adds "
        "(ARCHITECTURE.md: Reductions, Scans, Matrix products), so it may match torch's "
        "float64 answer where torch's float32 one rounds or overflows (every comparison "
        "accepts that: more_exact_or_same); float16/bfloat16 products and means likewise "
        "stay finite where torch's half-precision steps overflow",
        "differs",
        None,
        None,
    ),
    "bool_add_counts": (
        "add of two bools gives int64 (API.md: where the book and PyTorch differ), so an "
        "in-place add into a bool tensor is refused",
        "differs|kael raises",
        _bool_add,
        lambda s: mapped(s.tns, lambda t: t.long() if t.dtype is torch.bool else t),
    ),
    "float_to_int_saturates": (
        "float -> int64 saturates and maps NaN to 0 (API.md); torch's x86 conversion gives "
        "INT64_MIN for NaN and out-of-range values",
        "differs",
        _unconvertible_float,
        _as_int64,
    ),
    "scalar_conversion": (
        "a Python float stored into a tensor follows the book's conversions (int64 "
        "saturates, NaN is 0; float32 rounds, to infinity beyond its range); torch refuses "
        "a value the dtype cannot hold",
        "kael answers",
        _overflowing_scalar,
        _scalar_stored,
    ),
    "bool_pow_refused": (
        "pow whose result dtype is bool throws (chapter 05: pow, result_dtype); torch answers "
        "for the exponents its fast paths copy or square without the kernel",
        "kael raises",
        lambda s: "pow" in s.name and isinstance(s.kerr, kael.TypeError) and _bools(s),
        None,
    ),
    "overlapping_writes_refused": (
        "kael refuses any write into an internally overlapping (expanded) tensor (chapter "
        "05, check_writable); torch only warns for some ops",
        "kael raises",
        lambda s: s.op.inplace and has_internal_overlap(s.kx._impl),
        None,
    ),
    "aliased_operand_copied": (
        "an operand sharing the written tensor's storage in another layout is read from a "
        "copy (outputs.unaliased: x.add_(x.mT); index_ops.unshared for the writes by index, "
        "index_copy_, scatter_, put_, index_fill_: their source and index); torch refuses a "
        "partial overlap, or reads elements it has already written",
        "kael answers|differs",
        lambda s: s.op.inplace and any(type(v) is Code for v in s.args.values()),
        _aliased_oracle,
    ),
    "fill_through_repeats": (
        "x[key] = number fills, as fill_ does in both libraries, also where x[key] repeats "
        "elements (expanded); torch's setitem refuses internal overlap",
        "kael answers",
        lambda s: (
            s.name == "setitem"
            and not isinstance(s.tns["v"], torch.Tensor)
            and has_internal_overlap(s.kx._impl)
        ),
        None,
    ),
    "bool_matmul_refused": (
        "matrix products refuse bool (chapter 05); torch answers empty ones",
        "kael raises",
        lambda s: s.name in MATMULS and bool(s.torch_tensors(torch.bool)),
        None,
    ),
    "matmul_promotes": (
        "matrix products promote mixed dtypes (ARCHITECTURE.md: Matrix products); torch "
        "refuses them (or, when empty, keeps the first operand's dtype)",
        "kael answers|differs",
        lambda s: s.name in MATMULS and len({t.dtype for t in s.torch_tensors()}) > 1,
        _promoted,
    ),
    "overflowed_products": (
        "where products overflow or cancel (huge terms summing to a small value), a NaN, an "
        "infinity or the surviving rounding error depends on the order of the sum and on "
        "fused multiply-adds (ARCHITECTURE.md: Matrix products): kael's is within a dot "
        "product's error bound of the extended-precision product",
        "differs",
        _products_overflow,
        None,
    ),
    "extremes_reordered": (
        "a float64 sum or product whose partials overflow or underflow gives an infinity, a "
        "NaN or a zero that depends on the order of the terms: kael's fixed blocks and tree "
        "(ARCHITECTURE.md: Reductions) or sequential scans, torch's cascade",
        "differs",
        _extremes_reordered,
        None,
    ),
    "torch_moments_inexact": (
        "float64 var, std, norm and layer_norm where torch's sums or squares overflow (its "
        "layer_norm and norm do not rescale: NaN or inf) or its mean's rounding shows on "
        "data a few ulps wide; kael's corrected two-pass and rescaled retries "
        "(ARCHITECTURE.md: Reductions, Row kernels) give the exact answer, checked in "
        "rationals and mpmath",
        "differs",
        _moments_exact,
        None,
    ),
    "torch_remainder_nan": (
        "torch's vectorized float remainder gives NaN where a / b overflows (its scalar "
        "loop does not); kael gives the exact remainder, as Python's % and NumPy do",
        "differs",
        _remainder_nan,
        None,
    ),
    "cross_entropy_no_classes": (
        "cross_entropy of zero classes with extra dims is the [N, C] case in kael (an "
        "out-of-range target, or NaN when every target is ignored); torch's reshape fails",
        "kael answers",
        lambda s: s.name == "cross_entropy" and s.tx.ndim >= 3 and s.tx.shape[1] == 0,
        None,
    ),
    "result_layout": (
        "kael's nonzero writes its [n, ndim] coordinates row-major; torch's CPU kernel "
        "writes them column-major (a transposed view; the chain stops there, as a later view "
        "could view in one library and copy in the other). Every other op of the table lays "
        "its result out as torch does (an elementwise result in its operands' memory order)",
        "result layout",
        lambda s: s.name == "nonzero",
        None,
    ),
    "softmax_family_takes_ints": (
        "softmax, log_softmax, layer_norm and cross_entropy compute int and bool logits in "
        "float32 (chapter 05); torch refuses them (or, when empty, keeps their dtype)",
        "kael answers|differs",
        lambda s: s.name in SOFTMAX_FAMILY and not s.tx.dtype.is_floating_point,
        lambda s: {**s.tns, "x": s.tx.float()},
    ),
    "checks_without_work": (
        "kael checks dtypes, shapes and indices even when there is nothing to compute (an "
        "empty operand or result, a scan of a 0-d tensor); torch skips its kernel, and with "
        "it the check",
        "kael raises",
        _checked_without_work,
        None,
    ),
    "torch_logsumexp_no_dims": (
        "torch's logsumexp(dim=()) fails its own shape check (output with shape [] doesn't "
        "match [1, ...]); kael reduces every dim, as sum(dim=()) does",
        "kael answers",
        lambda s: s.name == "logsumexp" and s.args["d"] in ((), []) and not s.args["k"],
        lambda s: {**s.tns, "d": tuple(range(s.tx.ndim))} if s.tx.ndim else None,
    ),
}


# Failures the fuzzer found that are still open, each reported. name -> (what, kinds of
# outcome, predicate).
# KNOWN_OPEN lets CI pass meanwhile; emptying it (or KAEL_FUZZ_STRICT=1) shows them.
OPEN_CLASSES: dict[str, tuple[str, str, Callable]] = {}
KNOWN_OPEN: set[str] = set()
if STRICT:
    KNOWN_OPEN = set()


def explain(step: Step, kind: str) -> str | None:
    """The quirk that accounts for this outcome (None if none)."""
    for name, (_, kinds, applies, _) in KAEL_QUIRKS.items():
        if applies is not None and kind in kinds.split("|") and applies(step):
            return name
    return None


def upcast(ns: dict) -> dict | None:
    """ns with float32 tensors as float64 copies, other tensors as copies and a float32 dtype
    argument as float64 (torch's more exact answer to a float32 op), or None when ns holds
    no float32 tensor or dtype."""
    found = [t for t in tensors_in(list(ns.values())) if t.dtype is torch.float32]
    if not found and torch.float32 not in ns.values():
        return None
    wider = mapped(ns, lambda t: t.double() if t.dtype is torch.float32 else t.clone())
    return {k: torch.float64 if v is torch.float32 else v for k, v in wider.items()}


# ---- the chain -------------------------------------------------------------------------------


class Chain:
    """The state of one example: the repro so far and every tensor pair made or read,
    whose values must keep agreeing."""

    def __init__(self):
        self.lines = ["import kael as L  # or: import torch as L"]
        self.tracked: list[tuple[kael.Tensor, torch.Tensor]] = []
        self.names = 0

    def name(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    def render(self, value, xname: str) -> str:
        """Source for an argument (a Spec gets its own line and name)."""
        if isinstance(value, Spec):
            name = self.name("t")
            self.lines.append(f"{name} = {value.code()}")
            return name
        return source(value, xname, self.render)

    def materialize(self, value, kx, tx):
        """(kael value, torch value) of an argument: Specs built and tracked, dtypes and code
        resolved in each library."""
        if isinstance(value, Spec):
            (k, kb), (t, tb) = value.make(kael), value.make(torch)
            self.tracked.append((kb, tb))
            return k, t
        if isinstance(value, Dtype):
            return getattr(kael, value.name), getattr(torch, value.name)
        if isinstance(value, Code):
            return eval(value.text, {"x": kx}), eval(value.text, {"x": tx})
        if isinstance(value, tuple | list):
            pairs = [self.materialize(v, kx, tx) for v in value]
            kind = list if isinstance(value, list) else tuple
            return kind(p[0] for p in pairs), kind(p[1] for p in pairs)
        return value, value

    def disagreement(self) -> str | None:
        """The first tracked tensor whose values differ between the libraries."""
        for i, (k, t) in enumerate(self.tracked):
            diff = value_difference(k.numpy(), t.numpy(), TOL.get(t.dtype))
            if diff:
                return f"tracked tensor {i} {tuple(t.shape)} {t.dtype}: {diff}"
        return None

    def step(self, name: str, args: dict, xname: str, kx, tx):
        """Run op `name` on both libraries, check the rule, and return the next (name, kael,
        torch) tensors; StopChain when the chain cannot go on."""
        s = Step(self, name, args, xname, kx, tx)
        before = [t.clone() for _, t in self.tracked] if s.op.inplace else None
        s.want, s.terr = s.run(s.tns)
        s.got, s.kerr = s.run(s.kns)
        if s.kerr is not None and not isinstance(s.kerr, kael.Error):
            s.fail("untyped error", f"kael raises {type(s.kerr).__name__}: {s.kerr}")
        if s.terr is not None and s.kerr is not None:
            unchanged = before is not None and all(
                same_bits(a, b) for a, (_, b) in zip(before, self.tracked)
            )
            diff = self.disagreement() if unchanged else None
            if diff:
                s.fail("raising op writes", diff)
            event("outcome: both raise")
            raise StopChain
        if s.terr is not None:
            self.settle(s, "kael answers", f"torch raises {type(s.terr).__name__}: {s.terr}")
        elif s.kerr is not None:
            quirk = explain(s, "kael raises")
            if quirk is None:
                s.fail("kael raises", f"{type(s.kerr).__name__}: {s.kerr}; torch answers")
            event(f"quirk: {quirk}")
            raise StopChain
        event("outcome: both answer")
        self.check(s)
        pairs = list(zip(tensors_in(s.got), tensors_in(s.want)))
        if s.op.ties:
            pairs = pairs[:1]  # tied indices may differ: only the values go on
        self.tracked.extend(pairs)
        if not pairs or pairs[0][1].numel() > MAX_NUMEL:
            raise StopChain
        return s.out_name, *pairs[0]

    def settle(self, s: Step, kind: str, detail: str) -> None:
        """kael answered where torch raised: a quirk's oracle gives torch's answer to the
        equivalent call (then checked as usual), else the chain ends or the step fails."""
        quirk = explain(s, kind)
        if quirk is None:
            s.fail(kind, detail)
        event(f"quirk: {quirk}")
        oracle = KAEL_QUIRKS.get(quirk, (None,) * 4)[3]
        ns = oracle(s) if oracle else None
        if ns is None:
            raise StopChain
        s.upcast = upcast(ns)
        s.want, s.terr = s.run(ns)
        if s.terr is not None:
            s.fail(kind, f"{detail}; the equivalent call raises {s.terr}")

    def check(self, s: Step) -> None:
        """The result agrees with torch's (or with a quirk's oracle), view ops alias x as
        torch's do, and every tracked tensor still agrees."""
        diff = difference(s.got, s.want, s.op.zero_sign)
        if diff and s.op.ties:
            diff = ties_difference(s)
        if diff and not more_exact_or_same(s, s.want, s.upcast):
            quirk = explain_difference(s)
            if quirk is None:
                s.fail("differs", diff)
            event(f"quirk: {quirk}")
            raise StopChain
        if isinstance(s.got, kael.Tensor) and isinstance(s.want, torch.Tensor):
            check_view(s)
            check_result_layout(s)
        resync(s.got, s.want)
        diff = self.disagreement()
        if diff:
            s.fail("operands differ", diff)


def explain_difference(s: Step) -> str | None:
    """A quirk that accounts for a difference: one without an oracle, or one whose oracle's
    answer (or that answer computed in float64) is kael's."""
    for name, (_, kinds, applies, oracle) in KAEL_QUIRKS.items():
        if applies is None or "differs" not in kinds.split("|") or not applies(s):
            continue
        if oracle is None:
            return name
        ns = oracle(s)
        want = torch_answer(s, ns)
        if want is not None and more_exact_or_same(s, want, upcast(ns)):
            return name
    return None


def torch_answer(s: Step, ns: dict | None):
    """torch's answer to the op in namespace ns (None without one, or when it raises; no
    op of the table answers None)."""
    if ns is None:
        return None
    want, err = s.run(ns)
    return None if err is not None else want


def more_exact_or_same(s: Step, want, exact_ns: dict | None) -> bool:
    """kael's result is torch's `want`, or torch's answer in float64 (exact_ns) rounded to
    want's dtypes: the quirk float32_more_exact."""
    if difference(s.got, want, s.op.zero_sign) is None:
        return True
    more = torch_answer(s, exact_ns)
    if more is None or difference(s.got, cast_like(more, want)):
        return False
    event("quirk: float32_more_exact")
    return True


def cast_like(value, like):
    """value's tensors converted to the dtypes of like's (torch's float64 answer rounded to
    the float32 torch gives)."""
    if isinstance(value, torch.Tensor) and isinstance(like, torch.Tensor):
        return value.to(like.dtype) if like.dtype.is_floating_point else value
    if isinstance(value, tuple | list) and isinstance(like, tuple | list):
        return [cast_like(v, w) for v, w in zip(value, like)]
    return value


def resync(got, want) -> None:
    """Overwrite kael's float results with torch's bits where they differ (in tolerance), so
    the next op reads identical inputs."""
    for k, t in zip(tensors_in(got), tensors_in(want)):
        if not t.dtype.is_floating_point or not t.numel() or has_internal_overlap(k._impl):
            continue
        w = np.array(t.numpy(), order="C")
        if k.numpy().tobytes() != w.tobytes():  # bits: -0.0 is not 0.0 here
            k.copy_(kael.tensor(w))


def ties_difference(s: Step) -> str | None:
    """For sort, topk, max and min along a dim: the values agree and kael's indices pick
    those values (torch's may pick other tied elements)."""
    got, want = s.got, s.want
    diff = difference(got[0], want[0])
    if diff:
        return diff
    if got[1].dtype is not kael.int64 or got[1].shape != tuple(want[1].shape):
        return difference(got[1], want[1])
    d = s.args["d"]
    idx = torch.from_numpy(got[1].numpy().copy())
    src = s.tx if s.tx.ndim else s.tx.reshape(1)
    keep = idx if idx.ndim == src.ndim else idx.unsqueeze(d)
    if not src.numel() or not keep.numel():
        return None
    picked = src.gather(d, keep)
    picked = (picked if idx.ndim == src.ndim else picked.squeeze(d)).reshape(want[0].shape)
    return value_difference(picked.numpy(), want[0].numpy(), TOL.get(want[0].dtype))


def check_view(s: Step) -> None:
    """kael's result shares x's storage exactly when torch's does (a view, or a copy) and,
    for view ops whose x has one layout in both libraries, has the same strides (over dims
    of size > 1) and offset."""
    got, want, kx, tx = s.got, s.want, s.kx, s.tx
    if not want.numel() or not tx.numel():
        return
    t_shares = want.untyped_storage().data_ptr() == tx.untyped_storage().data_ptr()
    if got.shares_storage(kx) != t_shares:  # (x has one layout in both: see result_layout)
        s.fail("aliasing", f"kael's result shares x's storage: {not t_shares}, torch's: {t_shares}")
    if not s.op.view or not t_shares or not same_layout(kx, tx):
        return
    kept = [i for i, n in enumerate(want.shape) if n > 1]
    if [got.strides()[i] for i in kept] != [want.stride()[i] for i in kept] or (
        got.storage_offset() != want.storage_offset()
    ):
        s.fail(
            "layout",
            f"strides {got.strides()} offset {got.storage_offset()}, torch {want.stride()} "
            f"offset {want.storage_offset()}",
        )


def check_result_layout(s: Step) -> None:
    """A new result (not a view) orders its elements in memory as torch's does: an
    elementwise result keeps its operands' memory order (torch's TensorIterator), the
    other families give what torch's kernels give."""
    got, want = s.got, s.want
    if s.op.view or got.shares_storage(s.kx) or not want.numel():
        return
    if not same_layout(got, want, offset=False):
        quirk = explain(s, "result layout")
        if quirk is None:
            s.fail("result layout", f"strides {got.strides()}, torch {want.stride()}")
        event(f"quirk: {quirk}")
        raise StopChain  # the next op would read other layouts in the two libraries


def same_layout(k: kael.Tensor, t: torch.Tensor, offset: bool = True) -> bool:
    """Whether kael's and torch's tensors lay out their elements alike (torch's results
    keep their input's memory order, kael's are contiguous)."""
    kept = [i for i, n in enumerate(t.shape) if n > 1]
    return [k.strides()[i] for i in kept] == [t.stride()[i] for i in kept] and (
        not offset or k.storage_offset() == t.storage_offset()
    )


# ---- the test --------------------------------------------------------------------------------


def _budget(examples: int):
    return budget(examples, SEED)


def run_chain(data, first: str | None = None) -> None:
    """One example: a tensor, then 1-4 ops (the first one `first` when given), each checked
    against torch by Chain.step."""
    chain = Chain()
    spec = data.draw(specs(), label="x")
    (kx, kb), (tx, tb) = spec.make(kael), spec.make(torch)
    chain.tracked.append((kb, tb))
    chain.lines.append(f"t0 = {spec.code()}")
    xname = "t0"
    try:
        for i in range(data.draw(st.integers(1, 4), label="steps")):
            if first is not None and i == 0:
                name = first
            else:
                name = pick(data.draw, FAMILIES[pick(data.draw, sorted(FAMILIES), "family")], "op")
            event(f"op: {name}")
            dtype = str(tx.dtype).removeprefix("torch.")
            args = OPS[name].args(data.draw, tuple(tx.shape), dtype)
            xname, kx, tx = chain.step(name, args, xname, kx, tx)
    except StopChain:
        pass
    except Exception:  # a failure, or a fault of the fuzzer itself: show the chain
        note("\n".join(chain.lines))
        raise


@_budget(EXAMPLES // 2)
@given(st.data())
def test_random_op_chains_match_torch(data):
    """Free chains: every op drawn from the table."""
    run_chain(data)


# hypothesis favours some choices over others, so half the budget starts a chain with
# each op in turn: every op of the table runs in every run.
@pytest.mark.parametrize("first", sorted(OPS))
@_budget(max(EXAMPLES // 2 // len(OPS), 3))
@given(data=st.data())
def test_chains_from_each_op_match_torch(first, data):
    """Chains whose first op is `first`, so no op of the table goes untested."""
    run_chain(data, first)


def test_bitwise_inplace_operators_write_through_views():
    """Found by the fuzzer: x &= y, x |= y and x ^= y rebound x to a new tensor (Tensor had
    no __iand__, __ior__, __ixor__), so x's base never saw the write; torch writes in place,
    and refuses a result wider than x."""
    bases = []
    for L in (kael, torch):
        base = L.tensor([6, 5, 3, 12])
        view = base[1:]
        same = view
        view &= L.tensor([4, 7, 2])
        view |= 8
        view ^= L.tensor([1, 0, 1])
        assert view is same
        bases.append(base.tolist())
        with pytest.raises((kael.Error, RuntimeError)):
            same |= L.tensor([[1], [2]])
    assert bases[0] == bases[1]


def test_known_open_names_classes():
    """Every name in KNOWN_OPEN is a class of OPEN_CLASSES (a typo would hide nothing)."""
    assert set(KNOWN_OPEN) <= set(OPEN_CLASSES)


def test_the_checks_can_fail():
    """A value off by 5e-5 relative, another dtype, a zero of the other sign, a NaN where
    torch has a number: each is a difference; equal values and NaN against NaN are not."""
    k = kael.tensor(np.array([1.0, 2.0], dtype=np.float32))
    assert difference(k, torch.tensor([1.0, 2.0 + 1e-4])) is not None
    assert difference(k, torch.tensor([1.0, 2.0], dtype=torch.float64)) is not None
    assert difference(k, torch.tensor([1.0, 2.0])) is None
    zeros = torch.tensor([0.0, -0.0])
    assert difference(kael.tensor(np.zeros(2, np.float32)), zeros, zero_sign=True) is not None
    nan = torch.tensor([math.nan, 1.0])
    assert difference(kael.tensor(nan.numpy()), nan) is None
    assert difference(kael.tensor(np.array([1.0, 1.0], np.float32)), nan) is not None
