"""Loss modules: forward(input, target, ...) calls the functional loss with the module's
settings. PyTorch's deprecated size_average and reduce become the reduction they meant,
and class weights (weight, pos_weight) are buffers, in state_dict when set."""

from __future__ import annotations

from kael.nn import functional as F
from kael.nn.modules.declared import declare
from kael.nn.modules.shaping import PairwiseDistance
from kael.runtime import user_warning
from kael.runtime.errors import ValueError

LEGACY = (("size_average", None), ("reduce", None), ("reduction", "mean"))


def _prepare(*buffers: str, check=None):
    """prepare of a loss: PyTorch's constructor `check` first, then the legacy reduction
    and the buffers."""

    def prepare(module) -> None:
        if check is not None:
            check(module)
        d = module.__dict__
        if "size_average" in d:
            size_average, reduce = d.pop("size_average"), d.pop("reduce")
            if size_average is not None or reduce is not None:
                module.reduction = (
                    "none" if reduce is False else "mean" if size_average is not False else "sum"
                )
                user_warning.warn(
                    "size_average and reduce args will be deprecated, please use "
                    f"reduction='{module.reduction}' instead."
                )
        for name in buffers:
            module.register_buffer(name, d.pop(name))

    return prepare


def _loss(name: str, fn, settings, passed, buffers=(), check=None, **options):
    prepare = _prepare(*buffers, check=check)
    return declare(name, fn, settings, prepare=prepare, passed=passed, **options)


def _positive_margin(module) -> None:
    if module.margin <= 0:
        raise ValueError(
            f"{type(module).__name__}: expected margin to be greater than 0, got "
            f"{module.margin} instead"
        )


def _triplet_with_distance(module) -> None:
    """PyTorch's checks, and its default distance: a PairwiseDistance() submodule."""
    _positive_margin(module)
    if module.distance_function is None:
        module.distance_function = PairwiseDistance()


def _multi_margin(module) -> None:
    if module.p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    weight = module.weight
    if weight is not None and weight.dim() != 1:
        raise ValueError(
            f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.dim()}D instead"
        )


_PLAIN = ("reduction",)
L1Loss = _loss("L1Loss", F.l1_loss, LEGACY, _PLAIN)
MSELoss = _loss("MSELoss", F.mse_loss, LEGACY, _PLAIN)
SoftMarginLoss = _loss("SoftMarginLoss", F.soft_margin_loss, LEGACY, _PLAIN)
MultiLabelMarginLoss = _loss("MultiLabelMarginLoss", F.multilabel_margin_loss, LEGACY, _PLAIN)
_WEIGHTED = (("weight", None), *LEGACY)
BCELoss = _loss("BCELoss", F.binary_cross_entropy, _WEIGHTED, ("weight", "reduction"), ("weight",))
MultiLabelSoftMarginLoss = _loss(
    "MultiLabelSoftMarginLoss",
    F.multilabel_soft_margin_loss,
    _WEIGHTED,
    ("weight", "reduction"),
    ("weight",),
)
BCEWithLogitsLoss = _loss(
    "BCEWithLogitsLoss",
    F.binary_cross_entropy_with_logits,
    (*_WEIGHTED, ("pos_weight", None)),
    ("weight", "reduction", "pos_weight"),
    ("weight", "pos_weight"),
)
_CLASSES = (
    ("weight", None),
    ("size_average", None),
    ("ignore_index", -100),
    ("reduce", None),
    ("reduction", "mean"),
)
NLLLoss = _loss(
    "NLLLoss", F.nll_loss, _CLASSES, ("weight", "ignore_index", "reduction"), ("weight",)
)
CrossEntropyLoss = _loss(
    "CrossEntropyLoss",
    F.cross_entropy,
    (*_CLASSES, ("label_smoothing", 0.0)),
    ("weight", "ignore_index", "reduction", "label_smoothing"),
    ("weight",),
    inputs=("input", "target"),  # F.cross_entropy's door does not name them
)
KLDivLoss = _loss(
    "KLDivLoss", F.kl_div, (*LEGACY, ("log_target", False)), ("reduction", "log_target")
)
SmoothL1Loss = _loss(
    "SmoothL1Loss", F.smooth_l1_loss, (*LEGACY, ("beta", 1.0)), ("reduction", "beta")
)
HuberLoss = _loss(
    "HuberLoss", F.huber_loss, (("reduction", "mean"), ("delta", 1.0)), ("reduction", "delta")
)
_MARGIN = ("margin", "reduction")
HingeEmbeddingLoss = _loss(
    "HingeEmbeddingLoss", F.hinge_embedding_loss, (("margin", 1.0), *LEGACY), _MARGIN
)
CosineEmbeddingLoss = _loss(
    "CosineEmbeddingLoss", F.cosine_embedding_loss, (("margin", 0.0), *LEGACY), _MARGIN
)
MarginRankingLoss = _loss(
    "MarginRankingLoss", F.margin_ranking_loss, (("margin", 0.0), *LEGACY), _MARGIN
)
TripletMarginLoss = _loss(
    "TripletMarginLoss",
    F.triplet_margin_loss,
    (("margin", 1.0), ("p", 2.0), ("eps", 1e-6), ("swap", False), *LEGACY),
    ("margin", "p", "eps", "swap", "reduction"),
    check=_positive_margin,
)
TripletMarginWithDistanceLoss = _loss(
    "TripletMarginWithDistanceLoss",
    F.triplet_margin_with_distance_loss,
    (("distance_function", None), ("margin", 1.0), ("swap", False), ("reduction", "mean")),
    ("distance_function", "margin", "swap", "reduction"),
    check=_triplet_with_distance,
    keyword_only=("distance_function", "margin", "swap", "reduction"),
)
PoissonNLLLoss = _loss(
    "PoissonNLLLoss",
    F.poisson_nll_loss,
    (
        ("log_input", True),
        ("full", False),
        ("size_average", None),
        ("eps", 1e-8),
        ("reduce", None),
        ("reduction", "mean"),
    ),
    ("log_input", "full", "eps", "reduction"),
    inputs=("log_input", "target"),  # PyTorch's forward names its input log_input
)
GaussianNLLLoss = _loss(
    "GaussianNLLLoss",
    F.gaussian_nll_loss,
    (("full", False), ("eps", 1e-6), ("reduction", "mean")),
    ("full", "eps", "reduction"),
    keyword_only=("full", "eps", "reduction"),
)
MultiMarginLoss = _loss(
    "MultiMarginLoss",
    F.multi_margin_loss,
    (("p", 1), ("margin", 1.0), *_WEIGHTED),
    ("p", "margin", "weight", "reduction"),
    ("weight",),
    check=_multi_margin,
)
CTCLoss = _loss(
    "CTCLoss",
    F.ctc_loss,
    (("blank", 0), ("reduction", "mean"), ("zero_infinity", False)),
    ("blank", "reduction", "zero_infinity"),
)
