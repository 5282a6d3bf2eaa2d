"""kael.linalg: PyTorch's torch.linalg under its names, each in kael's dense kernels
(codegen/cpu/factorize.py, triangular.py) and kael's own ops."""

from kael.frontend import factorizations as _factorizations
from kael.frontend import orthogonal as _orthogonal
from kael.frontend import singular as _singular
from kael.frontend import spectral as _spectral
from kael.frontend.tracing import op_door as _op_door
from kael.runtime.errors import LinAlgError

_FUNCTIONS = {
    **_factorizations.LINALG,
    **_orthogonal.LINALG,
    **_spectral.LINALG,
    **_singular.LINALG,
}
globals().update({name: _op_door(f"linalg.{name}", fn) for name, fn in _FUNCTIONS.items()})

__all__ = ["LinAlgError", *_FUNCTIONS]
