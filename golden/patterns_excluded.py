"""The cases of the nn and new-dtype grids left out of the data, with the reason: each is a
known difference between kael and PyTorch (patterns.EXCLUDED adds them to the first grids')."""

from __future__ import annotations

TORCH_REFUSES_INTEGERS = "torch has no integer kernel here; kael takes integer input"

EXCLUDED_NEW = {
    # documented kael rules
    **{
        (op, "float16_and_float32_refused"): "kael's matmul promotes mixed dtypes "
        "(frontend/linalg.py); torch refuses them"
        for op in ("matmul", "mm")
    },
    **{
        (op, "int64_refused"): "kael's softmax computes integers in float32 "
        "(frontend/nn.py, the book's as_floating); torch refuses them"
        for op in ("softmax", "log_softmax")
    },
    ("threshold_", "expanded_self_refused"): "torch's threshold_ skips the overlap check its "
    "other in-place ops make; kael refuses writing an expanded tensor, as everywhere",
    ("kl_div", "bfloat16"): "torch composes kl_div from bfloat16 ops, each rounding; kael "
    "rounds once (tests/frontend/test_losses.py): 8 bfloat16 steps apart near 0.05",
    # more permissive than torch
    ("unfold", "int64"): TORCH_REFUSES_INTEGERS,
    ("max_pool1d", "int64"): TORCH_REFUSES_INTEGERS + " (torch's max_pool2d and 3d take it)",
    **{(f"adaptive_max_pool{d}d", "int64"): TORCH_REFUSES_INTEGERS for d in (1, 2, 3)},
    ("avg_pool3d", "bfloat16"): "torch's avg_pool3d has no bfloat16 kernel; kael averages "
    "bfloat16 in float32",
    # torch bugs
    ("pixel_unshuffle", "empty_batch"): "torch bug: pixel_unshuffle of a (0, 1, 2, 2) input "
    "gives it back unchanged instead of (0, 4, 1, 1); kael's shape is the rule's",
    # the tensor functions of patterns_more.py (reported with minimal repros)
    ("median", "int64_ties"): "kael differs: median's index among tied values (torch picks "
    "index 4 of [3, 5, -2, -1, 0, 0], kael 5); PyTorch leaves which tie unspecified",
    ("kron", "transposed"): "torch bug: kron of a transposed (3, 4) input raises a view error; "
    "kael computes it",
}
