"""nn.Parameter and nn.Buffer: tensors a Module registers as its state when assigned.

kael has no autograd, so a Parameter is a tensor with a type tag: assigning one to a
Module's attribute enters it in the module's parameters() and state_dict(), as in PyTorch.
It shares its data's elements. A Buffer marks a tensor to register as a buffer
(PyTorch's nn.Buffer); the module keeps the plain tensor.
"""

from __future__ import annotations

from kael.frontend import fastpath, views
from kael.frontend.factories import empty
from kael.frontend.outputs import type_name
from kael.frontend.tensor import Tensor
from kael.runtime.errors import Error, TypeError


def _handle_of(data: Tensor | None, what: str) -> Tensor:
    """A new handle to data's elements (an empty float tensor for None)."""
    if data is None:
        data = empty(0)
    if not isinstance(data, Tensor):
        raise TypeError(f"{what}(): data must be a Tensor or None, got {type_name(data)}")
    impl = data._impl
    return views.derive(impl, impl.shape, impl.strides, impl.offset)


def _flag(value, what: str, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{what}(): {name} must be a bool, got {type(value).__name__}")
    return value


def _differentiable(tensor: Tensor) -> bool:
    """Whether torch lets the tensor require grad: a floating or complex dtype."""
    return tensor.dtype.is_floating_point or tensor.dtype.is_complex


class Parameter(Tensor):
    """A module's learnable tensor: shares `data`'s elements. `requires_grad` is kept as
    PyTorch's flag (default True; code that counts or freezes trainable parameters reads
    and sets it), and nothing more: kael has no autograd, so no gradient is ever made.
    As in torch, only a floating or complex parameter may require grad."""

    __slots__ = ("_requires_grad",)

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        handle = _handle_of(data, "Parameter")
        if _flag(requires_grad, "Parameter", "requires_grad") and not _differentiable(handle):
            raise Error("Only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = requires_grad
        super().__init__(handle)

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if _flag(value, "Parameter", "requires_grad") and not _differentiable(self):
            raise Error("only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> Parameter:
        if _flag(requires_grad, "Parameter", "requires_grad") and not _differentiable(self):
            raise Error("only Tensors of floating point dtype can require gradients")
        self._requires_grad = requires_grad
        return self

    @property
    def data(self) -> Tensor:
        return self.detach()

    @data.setter
    def data(self, value: Tensor) -> None:
        """`p.data = t`, as Tensor's; refused, as torch, for a non-floating `t` while p
        requires grad."""
        if isinstance(value, Tensor) and self._requires_grad and not _differentiable(value):
            raise Error(
                "data set to a tensor that requires gradients must be floating point or "
                "complex dtype"
            )
        Tensor.data.fset(self, value)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class Buffer(Tensor):
    """A tensor to register as a module's buffer when assigned (persistent: in state_dict)."""

    __slots__ = ("persistent",)

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True) -> None:
        self.persistent = _flag(persistent, "Buffer", "persistent")
        super().__init__(_handle_of(data, "Buffer"))


fastpath.PLAIN.update((Parameter, Buffer))  # no op behaves differently on them


class _Uninitialized:
    """A placeholder whose shape a lazy module learns at its first forward: an empty tensor
    of the intended dtype and device until `materialize(shape)` gives it its elements
    (uninitialised, as torch.empty) and its final class."""

    __slots__ = ()
    becomes: type

    def materialize(self, shape, device=None, dtype=None) -> None:
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        self.data = empty(tuple(shape) if isinstance(shape, (tuple, list)) else (shape,),
                          device=device, dtype=dtype)  # fmt: skip
        self.__class__ = self.becomes

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class UninitializedParameter(_Uninitialized, Parameter):
    """A Parameter of a lazy module (LazyLinear ...) before its shape is known."""

    __slots__ = ()
    becomes = Parameter

    def __init__(self, requires_grad: bool = True, device=None, dtype=None) -> None:
        super().__init__(empty(0, device=device, dtype=dtype), requires_grad)


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer of a lazy module (LazyBatchNorm's running statistics) before its shape is
    known; it becomes a plain tensor."""

    __slots__ = ()
    becomes = Tensor

    def __init__(self, requires_grad: bool = False, device=None, dtype=None) -> None:
        super().__init__(empty(0, device=device, dtype=dtype)._impl)
