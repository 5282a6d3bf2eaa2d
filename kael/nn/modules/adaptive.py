"""AdaptiveLogSoftmaxWithLoss: Grave et al.'s adaptive softmax, as torch.nn has it (language
models with large vocabularies): a head over the frequent classes and one entry per
cluster, and per cluster a smaller projection over its classes."""

from __future__ import annotations

from collections import namedtuple

from kael.frontend import factories, index_ops, order_statistics
from kael.nn import functional as F
from kael.nn.modules.container import ModuleList, Sequential
from kael.nn.modules.linear import Linear
from kael.nn.modules.module import Module
from kael.runtime.errors import Error, ValueError

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


def _checked_cutoffs(cutoffs, n_classes: int) -> list[int]:
    cutoffs = list(cutoffs)
    if not cutoffs:
        raise ValueError("cutoffs should be a sequence of length larger than 0")
    ordered = cutoffs == sorted(cutoffs) and len(set(cutoffs)) == len(cutoffs)
    if (
        not ordered
        or min(cutoffs) <= 0
        or max(cutoffs) > n_classes - 1
        or any(int(c) != c for c in cutoffs)
    ):
        raise ValueError(
            "cutoffs should be a sequence of unique, positive integers sorted in an increasing"
            " order, where each value is between 1 and n_classes-1"
        )
    return [int(c) for c in cutoffs]


class AdaptiveLogSoftmaxWithLoss(Module):
    """forward(input, target) -> (log-probability of each target, mean loss); log_prob(input)
    the full [batch, n_classes] log-probabilities; predict(input) the likeliest classes."""

    def __init__(
        self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0,
        head_bias: bool = False, device=None, dtype=None,
    ) -> None:  # fmt: skip
        super().__init__()
        made = {"device": device, "dtype": dtype}
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = [*_checked_cutoffs(cutoffs, n_classes), n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **made)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **made),
                                        Linear(hidden, size, bias=False, **made)))  # fmt: skip

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection:
                layer.reset_parameters()

    def forward(self, input, target) -> _ASMoutput:
        batched = target.dim() > 0
        if target.dim() > 1:
            raise Error("0D or 1D target tensor expected, multi-target not supported")
        if batched and input.shape[0] != target.shape[0]:
            raise Error("Input and target should have the same size in the batch dimension.")
        if input.dim() != (2 if batched else 1):
            raise Error(
                f"{target.dim()}D target tensor expects {2 if batched else 1}D input tensors,"
                f" but found inputs with size {list(input.shape)}"
            )
        x, t = (input, target) if batched else (input.unsqueeze(0), target.unsqueeze(0))
        if t.numel() and (t.min().item() < 0 or t.max().item() >= self.n_classes):
            raise Error(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range"
                f" [{t.min().item()}, {t.max().item()}] were found. "
            )
        bounds = factories.tensor(self.cutoffs[:-1], device=t.device)
        cluster = order_statistics.bucketize(t, bounds, right=True)  # 0: the shortlist
        head_index = t.where(cluster == 0, cluster + (self.shortlist_size - 1))
        head = F.log_softmax(self.head(x), dim=1)
        output = head.gather(1, head_index.unsqueeze(1)).squeeze(1)
        for i, projection in enumerate(self.tail):
            rows = (cluster == i + 1).nonzero()[:, 0]
            if rows.numel():
                local = F.log_softmax(projection(x.index_select(0, rows)), dim=1)
                relative = t.index_select(0, rows) - self.cutoffs[i]
                output.index_add_(0, rows, local.gather(1, relative.unsqueeze(1)).squeeze(1))
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def log_prob(self, input):
        """log p(class) of every class, [batch, n_classes] (or [n_classes] unbatched)."""
        x = input if input.dim() == 2 else input.unsqueeze(0)
        head = F.log_softmax(self.head(x), dim=1)
        parts = [head[:, : self.shortlist_size]]
        for i, projection in enumerate(self.tail):
            tail = F.log_softmax(projection(x), dim=1)
            parts.append(tail + head[:, self.shortlist_size + i].unsqueeze(1))
        full = index_ops.cat(parts, 1)
        return full if input.dim() == 2 else full.squeeze(0)

    def predict(self, input):
        """The likeliest class of each row."""
        return self.log_prob(input).argmax(dim=-1)
