"""MultiheadAttention: PyTorch's module over F.multi_head_attention_forward, with its
parameters (one packed in_proj_weight, or q/k/v weights when key and value have other
widths), out_proj, optional bias_k/bias_v, and batch_first."""

from __future__ import annotations

from kael.frontend import autocast
from kael.frontend.factories import empty
from kael.frontend.grad_mode import is_grad_enabled
from kael.nn import functional as F
from kael.nn import init
from kael.nn.modules.linear import Linear
from kael.nn.modules.module import Module
from kael.nn.parameter import Parameter
from kael.runtime.errors import ValueError


class NonDynamicallyQuantizableLinear(Linear):
    """Linear under the name PyTorch gives MultiheadAttention's out_proj (its repr shows it)."""


def grads_wanted(tensors) -> bool:
    """torch's fast paths' grad test: grad mode is on and one of `tensors` (None skipped)
    requires grad (a Parameter does, as torch's: kael.no_grad() or inference_mode() off)."""
    return is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


class MultiheadAttention(Module):
    """Attention over num_heads heads of embed_dim // num_heads features each."""

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} "
                f"and num_heads={num_heads} instead"
            )
        if embed_dim % num_heads:
            raise ValueError(
                f"embed_dim must be divisible by num_heads, got {embed_dim} and {num_heads}"
            )
        made = {"device": device, "dtype": dtype}
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.batch_first, self.head_dim = batch_first, embed_dim // num_heads
        self.add_zero_attn = add_zero_attn
        separate = not self._qkv_same_embed_dim
        for name, width in (("q", embed_dim), ("k", self.kdim), ("v", self.vdim)):
            value = Parameter(empty((embed_dim, width), **made)) if separate else None
            self.register_parameter(f"{name}_proj_weight", value)
        packed = None if separate else Parameter(empty((3 * embed_dim, embed_dim), **made))
        self.register_parameter("in_proj_weight", packed)
        in_bias = Parameter(empty(3 * embed_dim, **made)) if bias else None
        self.register_parameter("in_proj_bias", in_bias)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias, **made)
        for name in ("bias_k", "bias_v"):
            value = Parameter(empty((1, 1, embed_dim), **made)) if add_bias_kv else None
            self.register_parameter(name, value)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """PyTorch's: Xavier-uniform projections, zero biases, Xavier-normal bias_k/v."""
        for name in ("in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight"):
            if getattr(self, name) is not None:
                init.xavier_uniform_(getattr(self, name))
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        for name in ("bias_k", "bias_v"):
            if getattr(self, name) is not None:
                init.xavier_normal_(getattr(self, name))

    def forward(
        self,
        query,
        key,
        value,
        key_padding_mask=None,
        need_weights: bool = True,
        attn_mask=None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ):
        """(output, weights averaged over heads, or per head, or None without
        need_weights); inputs (L, N, E), or (N, L, E) with batch_first, or unbatched."""
        flip = self.batch_first and query.dim() == 3
        native = flip and query is key is value and self._native_fast_path(query)
        if flip:
            query, key, value = (t.transpose(1, 0) for t in (query, key, value))
        separate = {}
        if not self._qkv_same_embed_dim:
            separate = {
                "use_separate_proj_weight": True,
                "q_proj_weight": self.q_proj_weight,
                "k_proj_weight": self.k_proj_weight,
                "v_proj_weight": self.v_proj_weight,
            }
        output, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            average_attn_weights=average_attn_weights, is_causal=is_causal, **separate,
        )  # fmt: skip
        if not flip:
            return output, weights
        output = output.transpose(1, 0)
        return (output.contiguous() if native else output), weights

    def _native_fast_path(self, query) -> bool:
        """Whether torch's forward of a batch_first self-attention (one tensor for query,
        key and value) takes its native fast path, whose result is laid out [N, L, E] (its
        other path returns [L, N, E] transposed): in eval, an even head count, one packed
        in_proj with a bias of the query's dtype, no bias_k/bias_v or zero attention, no
        autocast, and no gradient wanted (grad mode off, or nothing requires one)."""
        projections = (self.in_proj_weight, self.in_proj_bias, self.out_proj.weight)
        return not (
            self.training
            or grads_wanted((query, *projections, self.out_proj.bias))
            or self.num_heads % 2
            or self.bias_k is not None
            or self.bias_v is not None
            or self.add_zero_attn
            or not self._qkv_same_embed_dim
            or self.in_proj_bias is None
            or query.dtype is not self.in_proj_weight.dtype
            or query.dtype is not self.in_proj_bias.dtype
            or autocast.is_autocast_enabled(query.device.type)
        )
