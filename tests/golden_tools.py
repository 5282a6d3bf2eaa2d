"""The golden pipeline's shared tools: manifest lines, case arguments, views, loading, the
bfloat16 storage and the comparison; tests/golden_ops.py holds the op adapters.

Everything that calls an op is generic over `lib`, the library module: golden/generate.py passes
torch to compute the expected values and tests/test_golden.py passes kael to replay them, so both
sides apply the same views and make the same calls, and one registry serves both.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from golden_ops import adapter_for

ROOT = Path(__file__).resolve().parents[1]
# KAEL_GOLDEN_DIR points both sides at another data directory (to try out a regeneration).
GOLDEN_DIR = Path(os.environ.get("KAEL_GOLDEN_DIR", ROOT / "golden"))
MANIFEST = GOLDEN_DIR / "manifest.txt"

# ---- manifest lines --------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One manifest line: op, case name, named inputs with their views, encoded args, and either
    the number of output files or the type name of the error PyTorch raised."""

    op: str
    name: str
    inputs: tuple[str, ...] = ()
    views: dict[str, str] = field(default_factory=dict)
    args: str = ""
    outputs: int = 1
    error: str | None = None
    note: str | None = None

    @property
    def id(self) -> str:
        return f"{self.op}/{self.name}"

    def input_path(self, input_name: str, root: Path = GOLDEN_DIR) -> Path:
        return root / self.op / f"{self.name}_{input_name}.npy"

    def output_paths(self, root: Path = GOLDEN_DIR) -> list[Path]:
        if self.outputs == 1:
            return [root / self.op / f"{self.name}_out.npy"]
        return [root / self.op / f"{self.name}_out{i}.npy" for i in range(self.outputs)]

    def to_line(self) -> str:
        fields = [f"op={self.op}", f"case={self.name}", f"inputs={','.join(self.inputs)}"]
        fields += [f"view_{name}={self.views.get(name, 'none')}" for name in self.inputs]
        fields += [f"args={self.args}", f"outputs={self.outputs}"]
        if self.error:
            fields.append(f"error={self.error}")
        if self.note:
            fields.append(f"note={self.note}")
        return " ".join(fields)

    @staticmethod
    def from_line(line: str) -> Case:
        """Parse a manifest line; ValueError naming the line when a field is missing or odd."""
        fields = {}
        for item in line.split():
            key, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"manifest field {item!r} has no '=' in line: {line!r}")
            fields[key] = value
        missing = [k for k in ("op", "case", "inputs", "args", "outputs") if k not in fields]
        if missing:
            raise ValueError(f"manifest line lacks {', '.join(missing)}: {line!r}")
        inputs = tuple(n for n in fields["inputs"].split(",") if n)
        return Case(
            op=fields["op"],
            name=fields["case"],
            inputs=inputs,
            views={n: fields.get(f"view_{n}", "none") for n in inputs},
            args=fields["args"],
            outputs=int(fields["outputs"]),
            error=fields.get("error"),
            note=fields.get("note"),
        )


def read_manifest(path: Path = MANIFEST) -> list[Case]:
    """Every case of the manifest, in file order; ValueError on a repeated op/case."""
    cases = [Case.from_line(line) for line in path.read_text().splitlines() if line.strip()]
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise ValueError(f"manifest repeats the case {case.id}")
        seen.add(case.id)
    return cases


# ---- args: `dim:1,keepdim:True,dims:0/2` -------------------------------------------------------


def encode_value(value) -> str:
    """One arg value as manifest text: tuples join with '/', a 1-tuple ends in '/'."""
    if isinstance(value, tuple | list):
        parts = [encode_value(v) for v in value]
        return "/".join(parts) + ("/" if len(parts) < 2 else "")
    text = repr(value) if isinstance(value, float) else str(value)
    if any(c in text for c in " ,:/="):
        raise ValueError(f"arg value {value!r} cannot be written to a manifest line")
    return text


def encode_args(args: dict) -> str:
    return ",".join(f"{key}:{encode_value(value)}" for key, value in args.items())


def decode_value(text: str):
    """The inverse of encode_value: True/False, None, int, float (inf, nan too), tuple or str."""
    if "/" in text:
        return tuple(decode_value(p) for p in text.split("/") if p)
    if text in ("True", "False"):
        return text == "True"
    if text == "None":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def decode_args(text: str) -> dict:
    args = {}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition(":")
        if not sep:
            raise ValueError(f"arg {item!r} is not key:value")
        args[key] = decode_value(value)
    return args


# ---- views: `transpose:0:1`, `permute:1:2:0`, `slice:dim:start:end:step`, `expand:3:4` ---------


def apply_view(t, view: str):
    """t with the view (or '+'-joined chain of views) applied by the library's own view code."""
    for step in view.split("+"):
        kind, *nums = step.split(":")
        n = [int(x) for x in nums]
        if kind == "none":
            continue
        if kind == "transpose":
            t = t.transpose(n[0], n[1])
        elif kind == "permute":
            t = t.permute(*n)
        elif kind == "slice":
            dim, start, end, stride = n
            t = t[(slice(None),) * dim + (slice(start, end, stride),)]
        elif kind == "expand":
            t = t.expand(*n)
        elif kind == "unsqueeze":
            t = t.unsqueeze(n[0])
        else:
            raise ValueError(f"unknown view {step!r} in {view!r}")
    return t


# ---- loading ---------------------------------------------------------------------------------


# A .npy cannot hold bfloat16: a bfloat16 array is stored as a structured array with one field
# named "bfloat16" holding the values as float32 (each bfloat16 is exactly a float32).
BFLOAT16 = np.dtype([("bfloat16", np.float32)])


def to_array(t) -> np.ndarray:
    """A lib tensor (on any device) as a C-order NumPy array; bfloat16 as BFLOAT16."""
    host = t.cpu() if str(t.device) != "cpu" else t
    if str(host.dtype).endswith("bfloat16"):
        values = np.array(host.float().numpy(), order="C")
        array = np.empty(values.shape, BFLOAT16)
        array["bfloat16"] = values
        return array
    return np.array(host.numpy(), order="C")  # ascontiguousarray would make a 0-d array 1-d


def from_array(array: np.ndarray, lib):
    """The inverse of to_array: a lib tensor of the array's values, bfloat16 for BFLOAT16."""
    if array.dtype == BFLOAT16:
        return lib.from_numpy(np.array(array["bfloat16"], order="C")).to(lib.bfloat16)
    return lib.from_numpy(array)


def load_inputs(case: Case, lib, root: Path = GOLDEN_DIR, device: str = "cpu") -> dict:
    """The case's inputs as `lib` tensors on `device`: each base .npy loaded (and copied to
    the device), then its view applied."""
    out = {}
    for name in case.inputs:
        base = from_array(np.load(case.input_path(name, root), allow_pickle=False), lib)
        if device != "cpu":
            base = base.to(device)
        out[name] = apply_view(base, case.views[name])
    return out


def load_expected(case: Case, root: Path = GOLDEN_DIR) -> list[np.ndarray]:
    return [np.load(path, allow_pickle=False) for path in case.output_paths(root)]


def as_arrays(result) -> list[np.ndarray]:
    """An op's result (a tensor, a tuple of tensors, or a Python bool/number) as C-order arrays."""
    items = list(result) if isinstance(result, tuple) else [result]
    arrays = []
    for item in items:
        if hasattr(item, "numpy"):
            arrays.append(to_array(item))
        elif isinstance(item, bool | int | float):
            arrays.append(np.asarray(item))
        else:
            raise TypeError(f"op returned {type(item).__name__}, expected a tensor or a number")
    return arrays


# ---- the comparison --------------------------------------------------------------------------

# (rtol, atol) per floating dtype; integers and bool compare exactly.
TOLERANCES = {
    np.dtype(np.float32): (1e-5, 1e-6),
    np.dtype(np.float64): (1e-12, 1e-14),
    np.dtype(np.float16): (2e-3, 1e-5),  # float32 math rounded once: a step or two apart
    BFLOAT16: (2**-6, 1e-5),  # two bfloat16 steps (2**-7 each at 1.0), for the same reason
}


def mismatch(actual: np.ndarray, expected: np.ndarray) -> str | None:
    """None when actual matches expected in shape, dtype and values (NaN equals NaN, infinities
    by sign, floats within TOLERANCES), else a message naming the first mismatching index."""
    if actual.shape != expected.shape:
        return f"shape {actual.shape} != expected {expected.shape}"
    if actual.dtype != expected.dtype:
        return f"dtype {_dtype_name(actual.dtype)} != expected {_dtype_name(expected.dtype)}"
    tolerance = TOLERANCES.get(expected.dtype)
    if expected.dtype == BFLOAT16:
        actual, expected = actual["bfloat16"], expected["bfloat16"]
    if tolerance:
        rtol, atol = tolerance
        a, e = actual.astype(np.float64), expected.astype(np.float64)
        both_nan = np.isnan(a) & np.isnan(e)
        finite = np.isfinite(e) & np.isfinite(a)
        with np.errstate(invalid="ignore", over="ignore"):
            close = finite & (np.abs(a - e) <= atol + rtol * np.abs(e))
        ok = both_nan | close | (~np.isnan(e) & ~np.isfinite(e) & (a == e))
    else:
        ok = actual == expected
    bad = np.argwhere(~ok)
    if not len(bad):
        return None
    index = tuple(int(i) for i in bad[0])
    got, want = actual[index], expected[index]
    detail = f"actual {got!r}, expected {want!r}"
    if tolerance and math.isfinite(float(got)) and math.isfinite(float(want)):
        detail += f", difference {abs(float(got) - float(want))!r}"
    return f"{len(bad)} of {expected.size} elements differ; first at index {list(index)}: {detail}"


def _dtype_name(dtype: np.dtype) -> str:
    return "bfloat16" if dtype == BFLOAT16 else str(dtype)


def assert_matches(result, expected: list[np.ndarray]) -> None:
    """AssertionError unless the op's result matches every expected output."""
    actual = as_arrays(result)
    if len(actual) != len(expected):
        raise AssertionError(f"op returned {len(actual)} outputs, expected {len(expected)}")
    for i, (a, e) in enumerate(zip(actual, expected)):
        problem = mismatch(a, e)
        if problem:
            where = f"output {i}: " if len(expected) > 1 else ""
            raise AssertionError(where + problem)


# Which kael error class matches the builtin type PyTorch raised (kael's are all kael.Error, a
# RuntimeError; the typed ones are also the builtin of their name).
KAEL_ERRORS = {
    "RuntimeError": "Error",
    "NotImplementedError": "Error",
    "TypeError": "TypeError",
    "ValueError": "ValueError",
    "IndexError": "IndexError",
    "_LinAlgError": "linalg.LinAlgError",  # torch.linalg.LinAlgError's class name
}


def error_class(torch_name: str, lib) -> type:
    """The lib error class a case that PyTorch failed with torch_name must raise."""
    return functools.reduce(getattr, KAEL_ERRORS[torch_name].split("."), lib)


def run_case(case: Case, lib, root: Path = GOLDEN_DIR, device: str = "cpu"):
    """Load the case's inputs into lib, apply the views and call the op; returns its result."""
    adapter = adapter_for(case.op)
    return adapter(lib, load_inputs(case, lib, root, device), decode_args(case.args))


def check_case(case: Case, lib, root: Path = GOLDEN_DIR, device: str = "cpu") -> None:
    """AssertionError unless lib (kael) reproduces the case with its inputs on `device`: its
    outputs, or, where PyTorch raised, the typed lib error matching PyTorch's error type."""
    if not case.error:
        assert_matches(run_case(case, lib, root, device), load_expected(case, root))
        return
    expected = error_class(case.error, lib)
    try:
        run_case(case, lib, root, device)
    except expected:
        return
    except Exception as e:
        raise AssertionError(
            f"expected {expected.__name__} (PyTorch raised {case.error}), "
            f"got {type(e).__name__}: {e}"
        ) from e
    raise AssertionError(f"expected {expected.__name__} (PyTorch raised {case.error}), got none")
