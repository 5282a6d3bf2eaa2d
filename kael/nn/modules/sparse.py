"""Embedding and EmbeddingBag: lookup tables of num_embeddings rows (normal(0, 1) at
first, the padding row zero), loadable from a pretrained weight."""

from __future__ import annotations

import builtins
import functools
import inspect

from kael.frontend.factories import empty
from kael.frontend.tensor import Tensor
from kael.nn import functional as F
from kael.nn import init
from kael.nn.modules.module import Module
from kael.nn.parameter import Parameter
from kael.runtime.errors import TypeError, ValueError


def _padding_row(padding_idx, num_embeddings: int) -> int | None:
    """padding_idx as a row index (a negative one counts from the end), checked in range."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(
            f"padding_idx must be within num_embeddings: got {padding_idx} for "
            f"{num_embeddings} embeddings"
        )
    return padding_idx % num_embeddings


class _Table(Module):
    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None,
        max_norm: float | None,
        norm_type: float,
        scale_grad_by_freq: bool,
        sparse: bool,
        _weight: Tensor | None,
        trainable: bool,
        device,
        dtype,
    ) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = _padding_row(padding_idx, num_embeddings)
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(
                empty((num_embeddings, embedding_dim), device=device, dtype=dtype), trainable
            )
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(
                    f"Shape of weight {list(_weight.shape)} does not match num_embeddings and "
                    f"embedding_dim ({num_embeddings}, {embedding_dim})"
                )
            self.weight = Parameter(_weight, trainable)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight[self.padding_idx].fill_(0)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, *args, **settings):
        """A table over `embeddings` (rows, dim) itself, its settings given as PyTorch's
        from_pretrained takes them; `freeze` clears the weight's requires_grad."""
        if embeddings.dim() != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        try:
            bound = _pretrained_settings(cls).bind(*args, **settings)
        except builtins.TypeError as e:
            raise TypeError(f"{cls.__name__}.from_pretrained(): {e}") from None
        rows, cols = embeddings.shape
        table = cls(rows, cols, _weight=embeddings, **bound.arguments)
        table.weight.requires_grad = not freeze
        return table

    def _settings_repr(self, shown: tuple[str, ...]) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if "padding_idx" in shown and self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if "sparse" in shown and self.sparse is not False:
            s += ", sparse=True"
        return s


@functools.cache
def _pretrained_settings(cls: type[_Table]) -> inspect.Signature:
    """from_pretrained's settings after `freeze`: the constructor's after the two sizes,
    less the private ones and device and dtype (PyTorch's order)."""
    skipped = {"self", "num_embeddings", "embedding_dim", "device", "dtype"}
    return inspect.Signature(
        [
            p
            for p in inspect.signature(cls.__init__).parameters.values()
            if p.name not in skipped and not p.name.startswith("_")
        ]
    )


class Embedding(_Table):
    """Rows of the table at the input's indices (max_norm renormalises the rows looked up,
    in place, as PyTorch does)."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
            scale_grad_by_freq, sparse, _weight, not _freeze, device, dtype,
        )  # fmt: skip

    def forward(self, input):
        return F.embedding(
            input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
            self.scale_grad_by_freq, self.sparse,
        )  # fmt: skip

    def extra_repr(self) -> str:
        return self._settings_repr(("padding_idx", "sparse"))


class EmbeddingBag(_Table):
    """Sums, means or maxima of bags of rows (bags given by offsets or a 2-d input)."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Tensor | None = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
            scale_grad_by_freq, sparse, _weight, True, device, dtype,
        )  # fmt: skip
        self.mode, self.include_last_offset = mode, include_last_offset

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(
            input, self.weight, offsets, self.max_norm, self.norm_type,
            self.scale_grad_by_freq, self.mode, self.sparse, per_sample_weights,
            self.include_last_offset, self.padding_idx,
        )  # fmt: skip

    def extra_repr(self) -> str:
        return (
            self._settings_repr(())
            + f", mode={self.mode!r}"
            + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")
        )
