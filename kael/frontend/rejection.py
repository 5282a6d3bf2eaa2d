"""Samplers that draw by rejection or inversion, each element a pure function of the Philox
stream: poisson, binomial, and the gamma family's _standard_gamma and _sample_dirichlet.

An element owns a fixed run of consecutive Philox blocks (poisson and binomial 17, gamma
13), and every attempt of its rejection loop is computed and the first accepted one
kept, so the kernels stay branch-free and vectorized and a value depends on neither the
thread count nor the device. Values match PyTorch's distributions, not its draws.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from kael.frontend import eager, factories, tracing, views
from kael.frontend.elementwise import broadcast_shapes
from kael.frontend.outputs import tensor_arg
from kael.frontend.random import _const, _f, _op, _scalar, _unit, generator_arg
from kael.frontend.tensor import Tensor
from kael.ir import graph as g
from kael.runtime.dtypes import bool_, float32, float64, int64
from kael.runtime.errors import NotImplementedError, TypeError, ValueError
from kael.runtime.typeinfo import finfo

# ---- poisson ------------------------------------------------------------------------------------

# Each element owns _POISSON_BLOCKS consecutive Philox blocks: block 0 drives the inversion
# for small rates, blocks 1.. one attempt each of the rejection sampler for large ones.
_POISSON_SMALL = 10.0  # rates below: inversion; from here on: PTRS
_POISSON_TERMS = 64  # inversion terms: P(X >= 64) < 1e-25 for a rate below 10
_POISSON_TRIES = 16  # PTRS attempts (each accepted with probability > 0.88): miss < 1e-14
_POISSON_BLOCKS = 1 + _POISSON_TRIES
# log k! for k < 10, exact to double rounding (math.lgamma on the host: constants)
_LOG_FACTORIAL = [math.lgamma(k + 1.0) for k in range(10)]


def _block_at(index: int, blocks: int = _POISSON_BLOCKS) -> tuple[g.Node, g.Node]:
    """The two 64-bit halves of Philox block `index` of this element's run of `blocks`."""
    position = _op("mul", g.Position(int64, (), 0), _const(int64, blocks))
    counter = _op("add", _op("add", position, _const(int64, index)), _scalar(int64, "offset"))
    seed = _scalar(int64, "seed")
    return _op("philox", counter, seed), _op("philox_hi", counter, seed)


def _log_factorial(k: g.Node) -> g.Node:
    """log k! of a float64 k >= 0: the table below 10, Stirling's series from there
    (relative error below 1e-14 at k = 10)."""
    k1 = _op("add", k, _f(1.0))
    inv = _op("div", _f(1.0), k1)
    inv2 = _op("mul", inv, inv)
    series = _op(
        "mul",
        inv,
        _op(
            "sub",
            _f(1.0 / 12.0),
            _op("mul", inv2, _op("sub", _f(1.0 / 360.0), _op("mul", inv2, _f(1.0 / 1260.0)))),
        ),
    )
    log_k1 = g.Unary(float64, (), "log", k1)
    stirling = _op(
        "add",
        _op("sub", _op("mul", _op("sub", k1, _f(0.5)), log_k1), k1),
        _op("add", _f(0.5 * math.log(2 * math.pi)), series),
    )
    value: g.Node = stirling
    for small in range(9, -1, -1):
        hit = _op("eq", k, _f(float(small)))
        value = g.Where(float64, (), hit, _f(_LOG_FACTORIAL[small]), value)
    return value


def _first_accepted(
    attempt: Callable[[g.Node, g.Node, g.Node, g.Node], tuple[g.Node, g.Node]],
) -> g.Node:
    """Hörmann's transformed rejection (PTRS, BTRS) over blocks 1.._POISSON_TRIES: each
    block's u uniform on [-1/2, 1/2), v on [0, 1), us = 1/2 - |u| and us kept from 0
    (`guard`) go to attempt(u, v, us, guard) -> (accepted, candidate); the first accepted
    candidate wins (the last candidate when none is)."""
    result: g.Node | None = None
    for index in range(_POISSON_TRIES, 0, -1):  # built last first: the first wins
        lo, hi = _block_at(index)
        u = _op("sub", _unit(lo), _f(0.5))
        v = _unit(hi)
        us = _op("sub", _f(0.5), g.Unary(float64, (), "abs", u))
        accepted, candidate = attempt(u, v, us, _op("max", us, _f(1e-300)))
        result = candidate if result is None else g.Where(float64, (), accepted, candidate, result)
    assert result is not None
    return result


def _launch(
    op: str,
    key: tuple,
    build: Callable[[], g.Node],
    out: Tensor,
    ins: list[Tensor],
    blocks: int,
    generator,
) -> bool:
    """build()'s kernel over `out` and `ins` (contiguous, out's shape), each element owning
    `blocks` Philox blocks reserved from `generator`; whether its flag fired."""
    n = out.numel()
    seed, offset = tracing.reserve(n * blocks, generator)
    if n == 0:
        return False
    flat = [views.derive(t._impl, (n,), (1,), t._impl.offset) for t in (out, *ins)]
    entry = eager.template(key, lambda: (op, [build()]))
    return eager.run(entry, flat[:1], flat[1:], {"seed": seed, "offset": offset})


def _poisson_small(lam: g.Node) -> g.Node:
    """Inversion: the count of k with P(X <= k) <= u, over _POISSON_TERMS terms."""
    u = _unit(_block_at(0)[0])
    p = g.Unary(float64, (), "exp", _op("sub", _f(0.0), lam))
    total, count = p, _op("mul", _f(0.0), lam)
    for k in range(1, _POISSON_TERMS):
        count = _op("add", count, g.Cast(float64, (), _op("le", total, u)))
        p = _op("mul", p, _op("div", lam, _f(float(k))))
        total = _op("add", total, p)
    return count


def _poisson_large(lam: g.Node) -> g.Node:
    """Hörmann's PTRS (transformed rejection with squeeze, 1993), as NumPy's legacy
    generator runs it; the first of _POISSON_TRIES accepted attempts (the last candidate
    when none is, with odds below 1e-14)."""
    safe = _op("max", lam, _f(_POISSON_SMALL))  # small rates take the other branch
    slam = g.Unary(float64, (), "sqrt", safe)
    loglam = g.Unary(float64, (), "log", safe)
    b = _op("add", _f(0.931), _op("mul", _f(2.53), slam))
    a = _op("add", _f(-0.059), _op("mul", _f(0.02483), b))
    invalpha = _op("add", _f(1.1239), _op("div", _f(1.1328), _op("sub", b, _f(3.4))))
    vr = _op("sub", _f(0.9277), _op("div", _f(3.6224), _op("sub", b, _f(2.0))))
    log_invalpha = g.Unary(float64, (), "log", invalpha)

    def attempt(u: g.Node, v: g.Node, us: g.Node, guard: g.Node) -> tuple[g.Node, g.Node]:
        spread = _op("add", _op("div", _op("mul", _f(2.0), a), guard), b)
        k = g.Unary(
            float64, (), "floor", _op("add", _op("add", _op("mul", spread, u), safe), _f(0.43))
        )
        quick = g.Binary(bool_, (), "and", _op("ge", us, _f(0.07)), _op("le", v, vr))
        refused = g.Binary(
            bool_,
            (),
            "or",
            _op("lt", k, _f(0.0)),
            g.Binary(bool_, (), "and", _op("lt", us, _f(0.013)), _op("gt", v, us)),
        )
        kk = _op("max", k, _f(0.0))
        lhs = _op(
            "sub",
            _op("add", g.Unary(float64, (), "log", v), log_invalpha),
            g.Unary(
                float64,
                (),
                "log",
                _op("add", _op("div", a, _op("mul", guard, guard)), b),
            ),
        )
        rhs = _op("sub", _op("sub", _op("mul", kk, loglam), safe), _log_factorial(kk))
        slow = g.Binary(bool_, (), "and", g.Unary(bool_, (), "not", refused), _op("le", lhs, rhs))
        return g.Binary(bool_, (), "or", quick, slow), kk

    return _first_accepted(attempt)


def poisson(input, generator=None) -> Tensor:
    """Poisson samples of the rates in input (a float tensor; its shape and dtype), each
    element a pure function of the Philox stream: rates below 10 by inversion of the CDF
    (one uniform against up to 64 cumulative terms), larger rates by Hörmann's PTRS
    transformed rejection (up to 16 attempts of two uniforms). Every element reserves 17
    blocks. Values match PyTorch's distribution, not its draws."""
    x = tensor_arg(input, "poisson")
    gen = generator_arg(generator, "poisson")
    if not x.dtype.is_floating_point:
        raise TypeError(f"poisson only supports floating point rates, got {x.dtype}")
    rates = x.contiguous()
    out = factories.new_tensor((x.shape,), x.dtype, x.device)
    dt = x.dtype

    def build() -> g.Node:
        raw = g.Input(dt, (), "rate")
        lam = g.Cast(float64, (), raw) if dt is not float64 else raw
        bad = g.Unary(bool_, (), "flag", g.Unary(bool_, (), "not", _op("ge", lam, _f(0.0))))
        small = _op("lt", lam, _f(_POISSON_SMALL))
        value = g.Where(float64, (), small, _poisson_small(lam), _poisson_large(lam))
        value = g.Where(float64, (), bad, _f(0.0), value)
        return g.Cast(dt, (), value) if dt is not float64 else value

    if _launch("poisson", ("random", "poisson", dt), build, out, [rates], _POISSON_BLOCKS, gen):
        raise ValueError("invalid Poisson rate, expected rate to be non-negative")
    return out


# ---- binomial ---------------------------------------------------------------------------------

# binomial shares poisson's layout: block 0 drives the inversion, blocks 1.. one BTRS attempt
# each (accepted with probability above 0.8 from n q = 10 on: a miss below 1e-11).
_BINOMIAL_SMALL = 10.0  # n q below (q = min(p, 1 - p)): inversion; from here on: BTRS
# log k! - Stirling's (k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2, exact below 10
_STIRLING_TAIL = [
    math.lgamma(k + 1.0) - (k + 0.5) * math.log(k + 1.0) + (k + 1.0) - 0.5 * math.log(2 * math.pi)
    for k in range(10)
]


def _stirling_tail(k: g.Node) -> g.Node:
    """BTRS's correction of Stirling's log k!, k >= 0 integral: the table below 10, then
    (1/12 - (1/360 - 1/1260 / (k + 1)^2) / (k + 1)^2) / (k + 1)."""
    k1 = _op("add", k, _f(1.0))
    inv_sq = _op("div", _f(1.0), _op("mul", k1, k1))
    inner = _op("sub", _f(1.0 / 360.0), _op("mul", _f(1.0 / 1260.0), inv_sq))
    value: g.Node = _op("div", _op("sub", _f(1.0 / 12.0), _op("mul", inner, inv_sq)), k1)
    for small in range(9, -1, -1):
        hit = _op("eq", k, _f(float(small)))
        value = g.Where(float64, (), hit, _f(_STIRLING_TAIL[small]), value)
    return value


def _binomial_small(n: g.Node, q: g.Node) -> g.Node:
    """Inversion of the CDF of Binomial(n, q), n q < 10: the count of k with P(X <= k) <= u
    over _POISSON_TERMS terms, at most n."""
    u = _unit(_block_at(0)[0])
    p = g.Unary(
        float64, (), "exp", _op("mul", n, g.Unary(float64, (), "log1p", _op("sub", _f(0.0), q)))
    )
    ratio = _op("div", q, _op("sub", _f(1.0), q))
    total, count = p, _op("mul", _f(0.0), n)
    for k in range(1, _POISSON_TERMS):
        count = _op("add", count, g.Cast(float64, (), _op("le", total, u)))
        left = _op("max", _op("sub", n, _f(k - 1.0)), _f(0.0))
        p = _op("mul", p, _op("mul", ratio, _op("div", left, _f(float(k)))))
        total = _op("add", total, p)
    return _op("min", count, n)


def _binomial_large(n: g.Node, q: g.Node) -> g.Node:
    """Hörmann's BTRS (transformed rejection with squeeze, 1993) for n q >= 10, as PyTorch
    runs it; the first of _POISSON_TRIES accepted attempts (the last candidate when none is)."""
    spread = g.Unary(float64, (), "sqrt", _op("mul", _op("mul", n, q), _op("sub", _f(1.0), q)))
    b = _op("add", _f(1.15), _op("mul", _f(2.53), spread))
    a = _op("add", _op("add", _f(-0.0873), _op("mul", _f(0.0248), b)), _op("mul", _f(0.01), q))
    c = _op("add", _op("mul", n, q), _f(0.5))
    v_r = _op("sub", _f(0.92), _op("div", _f(4.2), b))
    r = _op("div", q, _op("sub", _f(1.0), q))
    alpha = _op("mul", _op("add", _f(2.83), _op("div", _f(5.1), b)), spread)
    m = g.Unary(float64, (), "floor", _op("mul", _op("add", n, _f(1.0)), q))
    n1 = _op("add", n, _f(1.0))

    def log(x: g.Node) -> g.Node:
        return g.Unary(float64, (), "log", x)

    bound_m = _op(
        "add",
        _op(
            "mul",
            _op("add", m, _f(0.5)),
            log(_op("div", _op("add", m, _f(1.0)), _op("mul", r, _op("sub", n1, m)))),
        ),
        _op("add", _stirling_tail(m), _stirling_tail(_op("sub", n, m))),
    )

    def attempt(u: g.Node, v: g.Node, us: g.Node, guard: g.Node) -> tuple[g.Node, g.Node]:
        k = g.Unary(
            float64,
            (),
            "floor",
            _op("add", _op("mul", _op("add", _op("div", _op("mul", _f(2.0), a), guard), b), u), c),
        )
        inside = g.Binary(bool_, (), "and", _op("ge", k, _f(0.0)), _op("le", k, n))
        kk = _op("min", _op("max", k, _f(0.0)), n)
        quick = g.Binary(bool_, (), "and", _op("ge", us, _f(0.07)), _op("le", v, v_r))
        lhs = log(
            _op("div", _op("mul", v, alpha), _op("add", _op("div", a, _op("mul", guard, guard)), b))
        )
        rest = _op("sub", n1, kk)
        bound = _op(
            "add",
            _op("add", bound_m, _op("mul", n1, log(_op("div", _op("sub", n1, m), rest)))),
            _op(
                "sub",
                _op(
                    "mul",
                    _op("add", kk, _f(0.5)),
                    log(_op("div", _op("mul", r, rest), _op("add", kk, _f(1.0)))),
                ),
                _op("add", _stirling_tail(kk), _stirling_tail(_op("sub", n, kk))),
            ),
        )
        accepted = g.Binary(
            bool_, (), "and", inside, g.Binary(bool_, (), "or", quick, _op("le", lhs, bound))
        )
        return accepted, kk

    return _first_accepted(attempt)


def _binomial_value(count: g.Node, prob: g.Node) -> g.Node:
    """One Binomial(count, prob) draw as PyTorch's sample_binomial decides: 0 for count <= 0
    or prob <= 0, else NaN for a NaN prob or count, count for prob >= 1, NaN for an infinite
    count (PyTorch's BTRS gives inf or NaN at random); else floor(count) trials
    of q = min(prob, 1 - prob), by inversion or BTRS, reflected for prob > 1/2. Past 2**53
    trials (float64 has no fractions there) BTRS's float64 arithmetic widens the spread
    (2.5x at 1e20 trials: still 1e-10 of the mean); the mean stays right."""
    n = g.Unary(float64, (), "floor", count)
    q = _op("min", prob, _op("sub", _f(1.0), prob))
    mean = _op("mul", n, q)
    small = _op("lt", mean, _f(_BINOMIAL_SMALL))
    drawn = g.Where(float64, (), small, _binomial_small(n, q), _binomial_large(n, q))
    flipped = _op("gt", prob, _f(0.5))
    value = g.Where(float64, (), flipped, _op("sub", n, drawn), drawn)
    value = g.Where(float64, (), _op("eq", count, _f(math.inf)), _f(math.nan), value)
    value = g.Where(float64, (), _op("ge", prob, _f(1.0)), count, value)
    undefined = g.Binary(bool_, (), "or", _op("ne", count, count), _op("ne", prob, prob))
    value = g.Where(float64, (), undefined, _f(math.nan), value)
    nothing = g.Binary(bool_, (), "or", _op("le", count, _f(0.0)), _op("le", prob, _f(0.0)))
    return g.Where(float64, (), nothing, _f(0.0), value)


def binomial(count, prob, generator=None) -> Tensor:
    """Binomial samples of count trials with success probability prob (float32 or float64
    tensors of one dtype, broadcast), each element a pure function of the Philox stream:
    inversion of the CDF below n q = 10, Hörmann's BTRS beyond (poisson's block layout:
    17 blocks per element). Values match PyTorch's distribution, not its draws; a NaN
    count gives NaN (PyTorch's loops forever)."""
    count, prob = tensor_arg(count, "binomial", "count"), tensor_arg(prob, "binomial", "prob")
    gen = generator_arg(generator, "binomial")
    for what, t in (("count", count), ("prob", prob)):
        if t.dtype not in (float32, float64):
            raise TypeError(f"binomial only supports float32 and float64 {what}, got {t.dtype}")
    if count.dtype is not prob.dtype:
        raise TypeError(
            f"binomial expects count and prob of one dtype, got {count.dtype} and {prob.dtype}"
        )
    dt = count.dtype
    shape = broadcast_shapes(tuple(count.shape), tuple(prob.shape))
    ins = [t.expand(*shape).contiguous() for t in (count, prob)]
    out = factories.new_tensor((shape,), dt, count.device)

    def build() -> g.Node:
        count_in, prob_in = (g.Cast(float64, (), g.Input(dt, (), name)) for name in ("n", "p"))
        return g.Cast(dt, (), _binomial_value(count_in, prob_in))

    _launch("binomial", ("random", "binomial", dt), build, out, ins, _POISSON_BLOCKS, gen)
    return out


# ---- gamma ------------------------------------------------------------------------------------

# Marsaglia and Tsang's method (2000), as PyTorch's sample_gamma runs it, in float64. Each
# element owns _GAMMA_BLOCKS blocks: block 0's first half boosts a shape below 1 (Gamma(a)
# = Gamma(a + 1) U^(1/a)); then each pair of attempts reads two blocks, one Box-Muller
# pair of normals (its cosine and sine) and one uniform for each. An attempt is accepted
# with probability above 0.95: a miss of all _GAMMA_TRIES is below 1e-15.
_GAMMA_TRIES = 12
_GAMMA_BLOCKS = 1 + _GAMMA_TRIES


def _log(x: g.Node) -> g.Node:
    return g.Unary(float64, (), "log", x)


def _normal_pair(index: int) -> tuple[g.Node, g.Node]:
    """Box-Muller's two normals from the element's block `index` of _GAMMA_BLOCKS."""
    lo, hi = _block_at(index, _GAMMA_BLOCKS)
    radius = g.Unary(
        float64, (), "sqrt", _op("mul", _f(-2.0), _log(_op("sub", _f(1.0), _unit(lo))))
    )
    angle = _op("mul", _op("sub", _unit(hi), _f(0.5)), _f(2 * math.pi))  # |angle| <= pi
    cosine = g.Unary(float64, (), "cos_bounded", angle)
    sine = g.Unary(float64, (), "cos_bounded", _op("sub", angle, _f(math.pi / 2)))
    return _op("mul", radius, cosine), _op("mul", radius, sine)


def _gamma_value(alpha: g.Node) -> g.Node:
    """One Gamma(alpha, 1) draw in float64 for alpha > 0 (other lanes: any finite value)."""
    shape = _op("max", alpha, _f(1e-300))
    small = _op("lt", shape, _f(1.0))
    boosted = g.Where(float64, (), small, _op("add", shape, _f(1.0)), shape)
    u0 = _op("sub", _f(1.0), _unit(_block_at(0, _GAMMA_BLOCKS)[0]))  # in (0, 1]
    scale = g.Unary(float64, (), "exp", _op("div", _log(u0), shape))
    scale = g.Where(float64, (), small, scale, _f(1.0))
    d = _op("sub", boosted, _f(1.0 / 3.0))
    c = _op("div", _f(1.0), g.Unary(float64, (), "sqrt", _op("mul", _f(9.0), d)))
    attempts = []
    for pair in range(_GAMMA_TRIES // 2):
        normals = _normal_pair(1 + 2 * pair)
        uniforms = _block_at(2 + 2 * pair, _GAMMA_BLOCKS)
        for x, bits in zip(normals, uniforms):
            y = _op("add", _f(1.0), _op("mul", c, x))
            v = _op("mul", _op("mul", y, y), y)
            u = _op("sub", _f(1.0), _unit(bits))  # in (0, 1]
            xx = _op("mul", x, x)
            quick = _op("lt", u, _op("sub", _f(1.0), _op("mul", _f(0.0331), _op("mul", xx, xx))))
            log_v = _log(_op("max", v, _f(1e-300)))
            bound = _op(
                "add",
                _op("mul", _f(0.5), xx),
                _op("mul", d, _op("add", _op("sub", _f(1.0), v), log_v)),
            )
            fits = g.Binary(bool_, (), "or", quick, _op("lt", _log(u), bound))
            attempts.append((g.Binary(bool_, (), "and", _op("gt", y, _f(0.0)), fits), v))
    accepted, v = attempts[-1]
    result = _op("max", v, _f(0.0))  # none accepted (odds below 1e-15): the last, if valid
    for accepted, v in reversed(attempts[:-1]):  # built last first: the first wins
        result = g.Where(float64, (), accepted, v, result)
    return _op("mul", _op("mul", scale, d), result)


def _float_rates(x: Tensor, op: str, kernel: str) -> None:
    if x.dtype not in (float32, float64):
        raise NotImplementedError(
            f'"{kernel}" not implemented for {x.dtype}: {op} takes float32 or float64 shapes'
        )


def _gamma_into(alpha: Tensor, out: Tensor, generator) -> None:
    """Fill `out` (new, contiguous, alpha's shape) with Gamma(alpha, 1) draws at least the
    smallest normal number of out's dtype (PyTorch's clamp: alpha <= 0 or NaN gives it)."""
    dt = out.dtype

    def build() -> g.Node:
        raw = g.Input(alpha.dtype, (), "alpha")
        a = g.Cast(float64, (), raw) if alpha.dtype is not float64 else raw
        value = _gamma_value(a)
        value = g.Where(float64, (), _op("gt", a, _f(0.0)), value, _f(0.0))
        value = g.Cast(dt, (), value) if dt is not float64 else value
        return _op("max", value, _const(dt, float(finfo(dt).tiny)))

    key = ("random", "gamma", alpha.dtype, dt)
    _launch("standard_gamma", key, build, out, [alpha], _GAMMA_BLOCKS, generator)


def _standard_gamma(input, generator=None) -> Tensor:
    """Gamma(input, 1) samples of the shapes in input (float32 or float64; its shape and
    dtype), as torch._standard_gamma: Marsaglia and Tsang's method in float64, rounded, at
    least the dtype's smallest normal number (a shape <= 0 or NaN gives that number)."""
    x = tensor_arg(input, "_standard_gamma")
    gen = generator_arg(generator, "_standard_gamma")
    _float_rates(x, "_standard_gamma", "gamma_cpu")
    out = factories.new_tensor((x.shape,), x.dtype, x.device)
    _gamma_into(x.contiguous(), out, gen)
    return out


def _sample_dirichlet(input, generator=None) -> Tensor:
    """Dirichlet samples over input's last dimension (float32 or float64 concentrations),
    as torch._sample_dirichlet: float64 gamma draws normalized by their sum, rounded and
    clamped into [smallest normal, largest float below 1]."""
    x = tensor_arg(input, "_sample_dirichlet")
    gen = generator_arg(generator, "_sample_dirichlet")
    _float_rates(x, "_sample_dirichlet", "dirichlet")
    draws = factories.new_tensor((x.shape,), float64, x.device)
    _gamma_into(x.contiguous(), draws, gen)
    shares = draws / draws.sum(-1, keepdim=True)
    info = finfo(x.dtype)
    clamped = shares.to(x.dtype).clamp_(float(info.tiny), 1.0 - float(info.eps) / 2)
    # an infinite shape's share is inf / inf: PyTorch's clamp (std::max first) makes it tiny
    return clamped.nan_to_num_(nan=float(info.tiny))
