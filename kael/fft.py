"""kael.fft: PyTorch's torch.fft under its names (frontend/fft.py): fft, ifft, rfft, irfft,
hfft, ihfft and their 2-d and n-d forms, fftfreq, rfftfreq, fftshift and ifftshift, on
kael's complex tensors, each through the tracing door as kael.linalg's."""

from kael.frontend import autocast as _autocast
from kael.frontend import fft as _fft
from kael.frontend import published as _published
from kael.frontend.tracing import op_door as _op_door

globals().update({name: _op_door(f"fft.{name}", fn) for name, fn in _fft.FUNCTIONS.items()})

__all__ = sorted(_fft.FUNCTIONS)
_autocast.install(globals(), "fft")  # float32 under CPU autocast, as torch's
_published.publish(__name__, globals())  # pickle finds each function by this name
