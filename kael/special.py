"""kael.special: PyTorch's torch.special under its names. The functions that are kael ops
under another name are those ops themselves (expit is kael.sigmoid, gammaln kael.lgamma,
psi kael.digamma, ...); the rest are formula kernels, each through the tracing door as
kael.linalg's: frontend/special_math.py's (i0e, i1, i1e, the normal distribution's, erfcx, entr,
xlog1py, zeta, polygamma, multigammaln), frontend/bessel.py's (the Bessel functions J, Y,
I, K, their scaled K, spherical j0, Airy's Ai) and frontend/orthogonal_polynomials.py's
(Chebyshev's, shifted Chebyshev's, Hermite's, Laguerre's and Legendre's polynomials)."""

from kael.frontend import autocast as _autocast
from kael.frontend import out_forms as _out_forms
from kael.frontend import published as _published
from kael.frontend import special_math as _special_math
from kael.frontend.bessel import BESSEL as _BESSEL
from kael.frontend.ops import FUNCTIONS as _OPS
from kael.frontend.orthogonal_polynomials import ORTHOGONAL_POLYNOMIALS as _POLYNOMIALS
from kael.frontend.tracing import op_door as _op_door

# torch.special.NAME: kael.BASE (the same function object).
_ALIASES = {
    "expit": "sigmoid",
    "logit": "logit",
    "erf": "erf",
    "erfc": "erfc",
    "erfinv": "erfinv",
    "exp2": "exp2",
    "expm1": "expm1",
    "log1p": "log1p",
    "gammaln": "lgamma",
    "digamma": "digamma",
    "psi": "digamma",
    "polygamma": "polygamma",
    "i0": "i0",
    "xlogy": "xlogy",
    "round": "round",
    "softmax": "softmax",
    "log_softmax": "log_softmax",
    "logsumexp": "logsumexp",
    "sinc": "sinc",
    "gammainc": "igamma",
    "gammaincc": "igammac",
}
globals().update({name: _OPS[base] for name, base in _ALIASES.items()})
_KERNELS = {**_special_math.SPECIAL, **_BESSEL, **_POLYNOMIALS}
globals().update({name: _op_door(f"special.{name}", fn) for name, fn in _KERNELS.items()})

_out_forms.install(globals(), _out_forms.SPECIAL_OUT_FORMS)
_autocast.install(globals(), "special")  # its aliases wrapped with kael's under autocast

__all__ = sorted([*_ALIASES, *_KERNELS])
_published.publish(__name__, globals())  # pickle finds each function by this name
