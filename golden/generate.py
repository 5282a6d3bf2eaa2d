"""Write the golden cases of golden/patterns.py: inputs and PyTorch's outputs for kael's ops,
replayed by tests/test_golden.py.

Each input is a spec (shape, dtype, kind, view, explicit values); its base tensor (before the
view) is saved as .npy and the view is written to the manifest, so both sides re-apply it with
their own view code. Each case is seeded with the CRC32 of `op/case`: adding a case changes no
other case's data. Run from the repo root (torch is a test-only dependency):

    python golden/generate.py
"""

from __future__ import annotations

import math
import shutil
import sys
import warnings
import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests"), str(HERE)]
import golden_ops  # noqa: E402
import golden_tools as gt  # noqa: E402
from patterns import EXCLUDED, PENDING, TO_INT64_SPECIAL, op_table  # noqa: E402
from specs import INT64_MAX, INT64_MIN, Pattern, Spec  # noqa: E402


def make_base(s: Spec) -> torch.Tensor:
    """The base tensor of a spec, from the case's seeded global generator."""
    dtype = getattr(torch, s.dtype)
    if s.kind == "values":
        return torch.tensor(s.values, dtype=dtype).reshape(s.shape)
    if s.kind == "normal":
        return torch.randn(s.shape, dtype=dtype)
    if s.kind == "positive":
        return torch.rand(s.shape, dtype=dtype) * 3 + 0.01
    if s.kind == "unit":
        return torch.rand(s.shape, dtype=dtype) * 0.98 + 0.01
    if s.kind == "int64":
        return torch.randint(-5, 6, s.shape, dtype=torch.int64).to(dtype)
    if s.kind == "nonzero":
        magnitude = torch.randint(1, 6, s.shape, dtype=torch.int64)
        return torch.where(torch.rand(s.shape) < 0.5, -magnitude, magnitude).to(dtype)
    if s.kind == "index":
        return torch.randint(0, s.high, s.shape, dtype=torch.int64)
    if s.kind == "bool":
        return (torch.rand(s.shape) > 0.5).to(dtype)
    raise ValueError(f"unknown kind {s.kind!r}")


# ---- where the book and PyTorch differ (API.md, last section) ----------------------------------


def saturating_int64(x: torch.Tensor) -> torch.Tensor:
    """The book's float -> int64: truncate, saturate to INT64_MIN/INT64_MAX, NaN -> 0.
    PyTorch's result there is platform-dependent."""
    out = []
    for v in x.double().flatten().tolist():
        if math.isnan(v):
            out.append(0)
        elif v >= 2.0**63:
            out.append(INT64_MAX)
        elif v <= -(2.0**63):
            out.append(INT64_MIN)
        else:
            out.append(int(v))
    return torch.tensor(out, dtype=torch.int64).reshape(x.shape)


def book_to_int64(inputs: dict, args: dict) -> torch.Tensor:
    return saturating_int64(inputs["x"])


def book_copy_to_int64(inputs: dict, args: dict) -> torch.Tensor:
    x, y = inputs["x"], inputs["y"]
    return x.copy_(saturating_int64(y).expand(x.shape))


def book_bool_add(inputs: dict, args: dict) -> torch.Tensor:
    """add of two bools counts, giving int64 (PyTorch keeps bool, a logical or)."""
    a, b = inputs.values()
    return a.to(torch.int64) + b.to(torch.int64)


def book_arange(inputs: dict, args: dict) -> torch.Tensor:
    """An integer arange truncates start and step but counts from the untruncated values
    (PyTorch 2.13 counts from the truncated ones)."""
    start, end, step = args["start"], args["end"], args["step"]
    count = math.ceil((end - start) / step)
    return torch.tensor([int(start) + i * int(step) for i in range(count)], dtype=torch.int64)


# (op, case) -> (note for the manifest, the book's computation replacing PyTorch's call).
OVERRIDES = {
    **{("to", p.name): ("book_float_to_int64", book_to_int64) for p in TO_INT64_SPECIAL},
    ("copy_", "special_to_int64"): ("book_float_to_int64", book_copy_to_int64),
    ("add", "bool_and_bool"): ("book_bool_add", book_bool_add),
    ("arange", "integer_dtype_fractional"): ("book_arange_integer_dtype", book_arange),
}
# ---- writing -----------------------------------------------------------------------------------


def write_case(op: str, pattern: Pattern, root: Path) -> gt.Case:
    """Save the case's base inputs and PyTorch's (or the book's) outputs; return its manifest
    line. When PyTorch raises, the case records the error type instead of outputs."""
    torch.manual_seed(zlib.crc32(f"{op}/{pattern.name}".encode()))
    directory = root / op
    directory.mkdir(parents=True, exist_ok=True)
    case = gt.Case(
        op,
        pattern.name,
        tuple(pattern.inputs),
        {k: s.view for k, s in pattern.inputs.items()},
        gt.encode_args(pattern.args),
    )
    for name, s in pattern.inputs.items():
        np.save(case.input_path(name, root), gt.to_array(make_base(s)))
    note, override = OVERRIDES.get((op, pattern.name), (None, None))
    try:
        if override is not None:
            inputs = gt.load_inputs(case, torch, root)
            result = override(inputs, gt.decode_args(case.args))
        else:
            result = gt.run_case(case, torch, root)
        outputs = gt.as_arrays(result)
    except (RuntimeError, TypeError, ValueError, IndexError, NotImplementedError) as e:
        return replace(case, outputs=0, error=type(e).__name__, note=note)
    case = replace(case, outputs=len(outputs), note=note)
    for path, array in zip(case.output_paths(root), outputs):
        np.save(path, array)
    return case


def generate(root: Path = gt.GOLDEN_DIR) -> list[gt.Case]:
    """Delete the old data under root (not this script) and write every non-PENDING case."""
    for child in root.iterdir() if root.exists() else ():
        if child.is_dir():
            shutil.rmtree(child)
    root.mkdir(parents=True, exist_ok=True)
    cases = []
    for op, patterns in op_table().items():
        if op in PENDING:
            continue
        if op not in golden_ops.REGISTRY:
            raise KeyError(f"no golden op registered for {op!r}: add it to REGISTRY")
        names = [p.name for p in patterns]
        if len(set(names)) < len(names):
            repeated = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"{op} repeats the case names {repeated}")
        cases += [write_case(op, p, root) for p in patterns if (op, p.name) not in EXCLUDED]
    (root / "manifest.txt").write_text("".join(c.to_line() + "\n" for c in cases))
    return cases


if __name__ == "__main__":
    # Expected warnings of degenerate cases (the variance of one element) are not news.
    warnings.filterwarnings("ignore", category=UserWarning)
    torch.use_deterministic_algorithms(True)
    written = generate()
    ops = {c.op for c in written}
    errors = sum(1 for c in written if c.error)
    print(f"{len(written)} cases over {len(ops)} ops ({errors} expect an error)")
