"""kael's typed errors: each is a kael.Error and also the Python builtin of its name."""

import builtins
import pickle


class Error(RuntimeError):
    """Base of every kael error: internal invariants, devices, anything not typed below."""


class IndexError(Error, builtins.IndexError):
    """An element index, dimension or position out of range."""


class ValueError(Error, builtins.ValueError):
    """A bad shape, size or argument value."""


class TypeError(Error, builtins.TypeError):
    """An unsupported or mismatched dtype, or an argument of the wrong Python type."""


class KeyError(Error, builtins.KeyError):
    """A missing or badly formed name: a module's parameter, buffer or submodule name."""


class AttributeError(Error, builtins.AttributeError):
    """An attribute an object does not have (a Module's missing parameter or submodule)."""


class NotImplementedError(Error, builtins.NotImplementedError):
    """An op kael (like PyTorch) has no kernel for at this dtype or in this form."""


class OutOfMemoryError(Error):
    """A device (or the host) that cannot give the bytes asked for, even after the caching
    allocator freed its cache and asked again (torch.OutOfMemoryError)."""


class LinAlgError(Error):
    """A linear-algebra input the algorithm cannot factor: singular, not positive-definite,
    or an iteration that did not converge (torch.linalg.LinAlgError)."""


class UnpicklingError(Error, pickle.UnpicklingError):
    """A checkpoint that weights_only loading refuses (torch raises pickle.UnpicklingError,
    which the usual `except pickle.UnpicklingError:` fallback catches)."""


class UnsupportedDtype(TypeError, NotImplementedError):
    """An op with no kernel for this dtype: kael's TypeError, and the NotImplementedError
    torch raises for most such ("... not implemented for 'Long'"), so either catches it."""
