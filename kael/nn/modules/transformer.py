"""Transformer layers as PyTorch writes them: encoder and decoder layers (post- or
pre-norm), their stacks, and the full Transformer, over kael.nn's attention, linear,
dropout and layer norm modules."""

from __future__ import annotations

import copy
from collections.abc import Callable

from kael.frontend import autocast, tracing
from kael.frontend.factories import full
from kael.frontend.index_ops import where
from kael.frontend.sequence import triu
from kael.nn import functional as F
from kael.nn import init
from kael.nn.modules.activation import GELU, ReLU
from kael.nn.modules.attention import MultiheadAttention, grads_wanted
from kael.nn.modules.container import ModuleList
from kael.nn.modules.dropout import Dropout
from kael.nn.modules.linear import Linear
from kael.nn.modules.module import Module
from kael.nn.modules.normalization import LayerNorm
from kael.runtime import user_warning
from kael.runtime.dtypes import bool_
from kael.runtime.errors import ValueError

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation: str | Callable) -> Callable:
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation should be relu/gelu, not {activation}")
        return _ACTIVATIONS[activation]
    return activation


class _Layer(Module):
    """A self-attention block, a feed-forward block and their norms, shared by both layers."""

    def __init__(
        self, d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
        batch_first, norm_first, bias, norms, made,
    ) -> None:  # fmt: skip
        super().__init__()
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **made
        )
        self._cross(d_model, nhead, dropout, bias, batch_first, made)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **made)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **made)
        self.norm_first = norm_first
        for i in range(1, norms + 1):
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **made))
        for i in range(1, norms + 1):
            setattr(self, f"dropout{i}", Dropout(dropout))
        self.activation = _activation(activation)

    def _cross(self, d_model, nhead, dropout, bias, batch_first, made) -> None:
        """The decoder's attention over the encoder's memory (none in an encoder layer)."""

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal: bool):
        x = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
            need_weights=False, is_causal=is_causal,
        )[0]  # fmt: skip
        return self.dropout1(x)

    def _ff_block(self, x, dropout: Dropout):
        return dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoderLayer(_Layer):
    """Self-attention then a feed-forward block, each added back and layer-normed (after,
    or before with norm_first)."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
            norm_first, bias, 2, {"device": device, "dtype": dtype},
        )  # fmt: skip
        # torch's flag of its fused kernels: 1 relu, 2 gelu (any approximation), 0 other
        act = self.activation
        relu, gelu = act is F.relu or isinstance(act, ReLU), act is F.gelu or isinstance(act, GELU)
        self.activation_relu_or_gelu = 1 if relu else 2 if gelu else 0

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x), self.dropout2)
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x, self.dropout2))


class TransformerDecoderLayer(_Layer):
    """Self-attention, attention over the memory, then a feed-forward block, each added
    back and layer-normed."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
            norm_first, bias, 3, {"device": device, "dtype": dtype},
        )  # fmt: skip

    def _cross(self, d_model, nhead, dropout, bias, batch_first, made) -> None:
        self.multihead_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **made
        )

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, is_causal: bool):
        x = self.multihead_attn(
            x, memory, memory, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
            is_causal=is_causal, need_weights=False,
        )[0]  # fmt: skip
        return self.dropout2(x)

    def forward(
        self,
        tgt,
        memory,
        tgt_mask=None,
        memory_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ):
        x = tgt
        cross = (memory, memory_mask, memory_key_padding_mask, memory_is_causal)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), *cross)
            return x + self._ff_block(self.norm3(x), self.dropout3)
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, *cross))
        return self.norm3(x + self._ff_block(x, self.dropout3))


def _why_not_nested(layer) -> str:
    """Why torch's TransformerEncoder cannot take its nested-tensor path over copies of
    `layer` (its constructor's checks, its words), or "" where it can."""
    if not isinstance(layer, TransformerEncoderLayer):
        return "encoder_layer was not TransformerEncoderLayer"
    attention = layer.self_attn
    reasons = (
        (layer.norm_first, "encoder_layer.norm_first was True"),
        (not attention.batch_first, "encoder_layer.self_attn.batch_first was not True"
         "(use batch_first for better inference performance)"),
        (not attention._qkv_same_embed_dim,
         "encoder_layer.self_attn._qkv_same_embed_dim was not True"),
        (attention.in_proj_bias is None, "encoder_layer.self_attn was passed bias=False"),
        (not layer.activation_relu_or_gelu, "encoder_layer.activation_relu_or_gelu was not True"),
        (layer.norm1.eps != layer.norm2.eps,
         "encoder_layer.norm1.eps was not equal to encoder_layer.norm2.eps"),
        (attention.num_heads % 2 == 1, "encoder_layer.self_attn.num_heads is odd"),
    )  # fmt: skip
    return next((why for failed, why in reasons if failed), "")


class TransformerEncoder(Module):
    """num_layers copies of encoder_layer run in turn, then an optional norm. Where torch
    takes its nested-tensor path (use_nested_tensor, set at construction as torch's, with
    its warning; then in eval, no gradient wanted, a 3-d src with only a padding mask
    whose padding ends each row), the padded positions are zeros before the norm, as
    torch's result padded back from the nested tensor; elsewhere they hold the computed
    values (the positions the mask keeps agree either way)."""

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = ModuleList(copy.deepcopy(encoder_layer) for _ in range(num_layers))
        self.num_layers, self.norm = num_layers, norm
        self.enable_nested_tensor = self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why = _why_not_nested(encoder_layer)
        if enable_nested_tensor and why:
            user_warning.warn(
                f"enable_nested_tensor is True, but self.use_nested_tensor is False because {why}"
            )
            self.use_nested_tensor = False

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal: bool | None = None):
        padded = self._nested_padding(src, mask, src_key_padding_mask)
        output = src
        for layer in self.layers:
            output = layer(
                output, src_mask=mask, is_causal=bool(is_causal),
                src_key_padding_mask=src_key_padding_mask,
            )  # fmt: skip
        if padded is not None:
            output = where(padded.unsqueeze(-1), 0.0, output)
        return output if self.norm is None else self.norm(output)

    def _nested_padding(self, src, mask, padding):
        """The padded positions (bool [N, S]) where torch's forward takes its nested-tensor
        path, else None. Under kael.compile the mask's values are not read, so with
        mask_check (as torch.compile's) there is no such path."""
        first = self.layers[0] if len(self.layers) else None
        if (
            not self.use_nested_tensor
            or first is None
            or first.training
            or padding is None
            or mask is not None
            or src.ndim != 3
            or autocast.is_autocast_enabled(src.device.type)
            or (self.mask_check and tracing.active() is not None)
        ):
            return None
        attention = first.self_attn
        weights = (
            attention.in_proj_weight, attention.in_proj_bias, attention.out_proj.weight,
            attention.out_proj.bias, first.norm1.weight, first.norm1.bias, first.norm2.weight,
            first.norm2.bias, first.linear1.weight, first.linear1.bias, first.linear2.weight,
            first.linear2.bias,
        )  # fmt: skip
        if grads_wanted((src, *weights)):
            return None
        padded = padding if padding.dtype is bool_ else padding != 0
        if self.mask_check and bool((padded[:, :-1] & ~padded[:, 1:]).any()):
            return None  # a kept position after a padded one: not left-aligned
        return padded


class TransformerDecoder(Module):
    """num_layers copies of decoder_layer run in turn over one memory, then an optional norm."""

    def __init__(
        self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None
    ) -> None:
        super().__init__()
        self.layers = ModuleList(copy.deepcopy(decoder_layer) for _ in range(num_layers))
        self.num_layers, self.norm = num_layers, norm

    def forward(
        self,
        tgt,
        memory,
        tgt_mask=None,
        memory_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ):
        output = tgt
        for layer in self.layers:
            output = layer(
                output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal,
            )  # fmt: skip
        return output if self.norm is None else self.norm(output)


class Transformer(Module):
    """An encoder stack and a decoder stack, each ending in a layer norm (Vaswani et al.)."""

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = "relu",
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        made = {"device": device, "dtype": dtype}
        layer = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                 batch_first, norm_first, bias)  # fmt: skip
        self.encoder = custom_encoder or TransformerEncoder(
            TransformerEncoderLayer(*layer, **made),
            num_encoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **made),
        )
        self.decoder = custom_decoder or TransformerDecoder(
            TransformerDecoderLayer(*layer, **made),
            num_decoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **made),
        )
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)

    def forward(
        self,
        src,
        tgt,
        src_mask=None,
        tgt_mask=None,
        memory_mask=None,
        src_key_padding_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ):
        batch_dim = 0 if self.batch_first else 1
        if src.dim() == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise ValueError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ValueError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
            is_causal=src_is_causal,
        )  # fmt: skip
        return self.decoder(
            tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )  # fmt: skip

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """A causal mask: -inf above the diagonal, 0 on and below it."""
        return triu(full((sz, sz), float("-inf"), device=device, dtype=dtype), diagonal=1)
