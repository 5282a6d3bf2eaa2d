"""kael.linalg: PyTorch's torch.linalg under its names. The factorizations run kael's
dense kernels (codegen/cpu/dense.py and the modules built on it); norms and products are
kael's own reductions, matmul and elementwise ops."""

from kael.frontend import autocast as _autocast
from kael.frontend import eigen as _eigen
from kael.frontend import factorizations as _factorizations
from kael.frontend import ldl as _ldl
from kael.frontend import linalg_extras as _linalg_extras
from kael.frontend import matrix_norms as _matrix_norms
from kael.frontend import orthogonal as _orthogonal
from kael.frontend import products as _products
from kael.frontend import published as _published
from kael.frontend import singular as _singular
from kael.frontend import spectral as _spectral
from kael.frontend.tracing import op_door as _op_door
from kael.runtime.errors import LinAlgError

_FUNCTIONS = {
    **_factorizations.LINALG,
    **_orthogonal.LINALG,
    **_spectral.LINALG,
    **_eigen.LINALG,
    **_singular.LINALG,
    **_matrix_norms.LINALG,
    **_products.LINALG,
    **_linalg_extras.LINALG,
    **_ldl.LINALG,
}
globals().update({name: _op_door(f"linalg.{name}", fn) for name, fn in _FUNCTIONS.items()})

_autocast.install(globals(), "linalg")  # float32 under autocast, as torch's
__all__ = ["LinAlgError", *_FUNCTIONS]
_published.publish(__name__, globals())  # pickle finds each function by this name
