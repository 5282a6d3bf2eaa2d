"""Dropout modules: drop in training mode, the identity after eval()."""

from __future__ import annotations

from kael.nn import functional as F
from kael.nn.modules.declared import declare
from kael.runtime.errors import ValueError


def _check_p(module) -> None:
    if not 0 <= module.p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {module.p}")


def _dropout(name: str, fn):
    return declare(
        name,
        fn,
        (("p", 0.5), ("inplace", False)),
        "p={p}, inplace={inplace}",
        training="training",
        prepare=_check_p,
    )


Dropout = _dropout("Dropout", F.dropout)
Dropout1d = _dropout("Dropout1d", F.dropout1d)
Dropout2d = _dropout("Dropout2d", F.dropout2d)
Dropout3d = _dropout("Dropout3d", F.dropout3d)
AlphaDropout = _dropout("AlphaDropout", F.alpha_dropout)
FeatureAlphaDropout = _dropout("FeatureAlphaDropout", F.feature_alpha_dropout)
