"""kael.special: torch.special's names, the aliases the very kael ops they name (expit is
kael.sigmoid, gammaln kael.lgamma, ...) computing as torch.special's, and the module in
kael's public namespace."""

import types

import numpy as np
import pytest
import torch
from parity_helpers import close_to_torch
from parity_helpers import torch_pair as pair

import kael

ALIASES = {
    "expit": "sigmoid", "logit": "logit", "erf": "erf", "erfc": "erfc", "erfinv": "erfinv",
    "exp2": "exp2", "expm1": "expm1", "log1p": "log1p", "gammaln": "lgamma",
    "digamma": "digamma", "psi": "digamma", "polygamma": "polygamma", "i0": "i0",
    "xlogy": "xlogy", "round": "round", "softmax": "softmax", "log_softmax": "log_softmax",
    "logsumexp": "logsumexp", "sinc": "sinc", "gammainc": "igamma", "gammaincc": "igammac",
}  # fmt: skip
OWN = [
    "i0e", "i1", "i1e", "ndtr", "log_ndtr", "ndtri", "erfcx", "entr", "xlog1py", "zeta",
    "multigammaln",
    # the Bessel and Airy functions (frontend/bessel.py)
    "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
    "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai",
    # the orthogonal polynomials (frontend/orthogonal_polynomials.py)
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p",
]  # fmt: skip
RNG = np.random.default_rng(17)


def test_the_namespace_is_torch_special_s_names():
    assert isinstance(kael.special, types.ModuleType) and "special" in kael.__all__
    assert sorted(kael.special.__all__) == sorted([*ALIASES, *OWN])
    public = {n for n in dir(kael.special) if not n.startswith("_")}
    assert public == set(kael.special.__all__)
    for name in kael.special.__all__:
        assert callable(getattr(torch.special, name)), name


@pytest.mark.parametrize("name", sorted(ALIASES))
def test_aliases_are_the_kael_ops_themselves(name):
    assert getattr(kael.special, name) is getattr(kael, ALIASES[name])


UNARY_ALIASES = ["expit", "logit", "erf", "erfc", "erfinv", "exp2", "expm1", "log1p"]
UNARY_ALIASES += ["gammaln", "digamma", "psi", "i0", "round", "sinc"]


# PyTorch's round has no integer kernel ("round_vml_cpu" not implemented for 'Long').
CASES = [
    (name, dtype)
    for name in UNARY_ALIASES
    for dtype in (kael.float32, kael.float64, kael.int64)
    if not (name == "round" and dtype is kael.int64)
]


@pytest.mark.parametrize(("name", "dtype"), CASES, ids=str)
def test_unary_aliases_compute_as_torch_special(name, dtype):
    if dtype is kael.int64:
        values = RNG.integers(0, 2, 8) if name in ("logit", "erfinv") else RNG.integers(1, 6, 8)
    elif name in ("logit", "erfinv"):
        values = RNG.uniform(0.01, 0.99, (3, 4))
    else:
        values = RNG.uniform(-4, 4, (3, 4))
    kx, tx = pair(values, dtype)
    got = getattr(kael.special, name)(kx)
    tol = 1e-12 if dtype is kael.float64 else 2e-6
    close_to_torch(got, getattr(torch.special, name)(tx), tol, equal_nan=True)


def test_aliases_with_arguments_compute_as_torch_special():
    kx, tx = pair(RNG.uniform(-3, 3, (4, 5)))
    for name in ("softmax", "log_softmax"):
        for dim in (0, 1, -1):
            close_to_torch(
                getattr(kael.special, name)(kx, dim), getattr(torch.special, name)(tx, dim), 1e-6
            )
    close_to_torch(
        kael.special.logsumexp(kx, 1, keepdim=True), torch.special.logsumexp(tx, 1, True), 1e-6
    )
    close_to_torch(kael.special.round(kx, decimals=1), torch.special.round(tx, decimals=1), 1e-6)
    close_to_torch(kael.special.logit(kx, eps=0.1), torch.special.logit(tx, eps=0.1), 1e-6)
    close_to_torch(kael.special.polygamma(2, kx.abs()), torch.special.polygamma(2, tx.abs()), 2e-5)
    ky, ty = pair(RNG.uniform(0, 3, (1, 5)))
    close_to_torch(kael.special.xlogy(kx, ky), torch.special.xlogy(tx, ty), 1e-6)
    close_to_torch(kael.special.xlogy(2.0, ky), torch.special.xlogy(2.0, ty), 1e-6)


def test_special_functions_trace_under_compile():
    @kael.compile
    def f(x):
        return kael.special.expit(x) * kael.special.ndtr(x) + kael.special.entr(x.abs())

    kx, tx = pair(RNG.uniform(-3, 3, (6, 3)))
    expected = torch.special.expit(tx) * torch.special.ndtr(tx) + torch.special.entr(tx.abs())
    for _ in range(2):
        close_to_torch(f(kx), expected, 1e-6)
