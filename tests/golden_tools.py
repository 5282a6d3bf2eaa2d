"""The golden pipeline's shared tools: manifest lines, case arguments, views, op adapters, loading
and the comparison.

Everything that calls an op is generic over `lib`, the library module: golden/generate.py passes
torch to compute the expected values and tests/test_golden.py passes kael to replay them, so both
sides apply the same views and make the same calls, and one registry serves both.
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

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


def load_inputs(case: Case, lib, root: Path = GOLDEN_DIR, device: str = "cpu") -> dict:
    """The case's inputs as `lib` tensors on `device`: each base .npy loaded (and copied to
    the device), then its view applied."""
    out = {}
    for name in case.inputs:
        base = lib.from_numpy(np.load(case.input_path(name, root), allow_pickle=False))
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
            host = item.cpu() if str(item.device) != "cpu" else item
            arrays.append(np.array(host.numpy(), order="C"))  # ascontiguousarray makes 0-d 1-d
        elif isinstance(item, bool | int | float):
            arrays.append(np.asarray(item))
        else:
            raise TypeError(f"op returned {type(item).__name__}, expected a tensor or a number")
    return arrays


# ---- the comparison --------------------------------------------------------------------------

# (rtol, atol) per floating dtype; int64 and bool compare exactly.
TOLERANCES = {
    np.dtype(np.float32): (1e-5, 1e-6),
    np.dtype(np.float64): (1e-12, 1e-14),
    np.dtype(np.float16): (2e-3, 1e-5),  # float32 math rounded once: a step or two apart
}


def mismatch(actual: np.ndarray, expected: np.ndarray) -> str | None:
    """None when actual matches expected in shape, dtype and values (NaN equals NaN, infinities
    by sign, floats within TOLERANCES), else a message naming the first mismatching index."""
    if actual.shape != expected.shape:
        return f"shape {actual.shape} != expected {expected.shape}"
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype} != expected {expected.dtype}"
    if expected.dtype in TOLERANCES:
        rtol, atol = TOLERANCES[expected.dtype]
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
    if expected.dtype in TOLERANCES and math.isfinite(float(got)) and math.isfinite(float(want)):
        detail += f", difference {abs(float(got) - float(want))!r}"
    return f"{len(bad)} of {expected.size} elements differ; first at index {list(index)}: {detail}"


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
}


# ---- the op adapters -------------------------------------------------------------------------

Adapter = Callable[[object, dict, dict], object]


def resolve(lib, name: str):
    """lib.NAME, else lib.nn.functional.NAME; AttributeError naming the op when neither exists."""
    fn = getattr(lib, name, None)
    if fn is None:
        fn = getattr(lib.nn.functional, name, None)
    if fn is None:
        raise AttributeError(f"{lib.__name__} has no op {name!r}")
    return fn


def _with_dtypes(lib, args: dict) -> dict:
    """A copy of args (adapters pop from it) with a `dtype` name turned into lib's dtype."""
    args = dict(args)
    if "dtype" in args:
        args["dtype"] = getattr(lib, args["dtype"])
    return args


def _scalar_operand(args: dict) -> tuple:
    """The arg `other` (a Python-number operand) popped into a positional tail: parameter names
    differ (PyTorch's pow_ calls it exponent, kael's where calls it b)."""
    return (args.pop("other"),) if "other" in args else ()


def function(name: str, star: str | None = None) -> Adapter:
    """lib.NAME(*inputs, **args); `star` names an arg passed as the positional tail."""

    def call(lib, inputs: dict, args: dict):
        args = _with_dtypes(lib, args)
        tail = (args.pop(star) if star else ()) + _scalar_operand(args)
        return resolve(lib, name)(*inputs.values(), *tail, **args)

    return call


def binary(name: str) -> Adapter:
    """lib.NAME(a, b); a Python-scalar operand comes from the args `input` or `other`."""

    def call(lib, inputs: dict, args: dict):
        return resolve(lib, name)(*_two_operands(inputs, args))

    return call


def _two_operands(inputs: dict, args: dict) -> tuple:
    """(a, b) from the inputs, either one replaced by the Python-number arg `input` or `other`."""
    tensors = iter(inputs.values())
    a = args["input"] if "input" in args else next(tensors)
    b = args["other"] if "other" in args else next(tensors)
    return a, b


def first_then_keywords(name: str) -> Adapter:
    """lib.NAME(first input, other inputs by name, **args): layer_norm's weight and bias."""

    def call(lib, inputs: dict, args: dict):
        first, *rest = inputs
        return resolve(lib, name)(inputs[first], **{k: inputs[k] for k in rest}, **args)

    return call


def dim_second(name: str, as_method: bool = False) -> Adapter:
    """NAME(x, dim, *other inputs) (index_select, gather, scatter_add), or x.NAME(dim, ...) for
    the in-place methods (index_add_, scatter_add_)."""

    def call(lib, inputs: dict, args: dict):
        args = dict(args)
        x, *rest = inputs.values()
        dim = args.pop("dim")
        if as_method:
            return _checked_inplace(name, x, getattr(x, name)(dim, *rest, **args))
        return resolve(lib, name)(x, dim, *rest, **args)

    return call


def sequence_of_inputs(name: str) -> Adapter:
    """lib.NAME([inputs...], **args): cat and stack."""

    def call(lib, inputs: dict, args: dict):
        return resolve(lib, name)(list(inputs.values()), **args)

    return call


def method(name: str, star: str | None = None) -> Adapter:
    """first_input.NAME(*other inputs, **args); an in-place method must return self."""

    def call(lib, inputs: dict, args: dict):
        args = _with_dtypes(lib, args)
        self, *rest = inputs.values()
        tail = (args.pop(star) if star else ()) + _scalar_operand(args)
        return _checked_inplace(name, self, getattr(self, name)(*rest, *tail, **args))

    return call


def _checked_inplace(name: str, self, result):
    """result, after checking that an in-place method (name ends in _) returned self."""
    if name.endswith("_") and result is not self:
        raise AssertionError(f"in-place {name} did not return self")
    return result


def gelu_tanh(lib, inputs: dict, args: dict):
    return resolve(lib, "gelu")(*inputs.values(), approximate="tanh")


def to_dtype(lib, inputs: dict, args: dict):
    (x,) = inputs.values()
    return x.to(getattr(lib, args["dtype"]))


def getitem(lib, inputs: dict, args: dict):
    """x[index] with an integer or bool index tensor (advanced indexing: a copy)."""
    x, index = inputs.values()
    return x[index]


def setitem(lib, inputs: dict, args: dict):
    """x[index] = value (a Python number), giving back x."""
    x, index = inputs.values()
    x[index] = args["value"]
    return x


def python_operator(name: str) -> Adapter:
    """operator.NAME on the inputs: `a - b`, `2.5 - b` (a Python scalar from the arg `input`),
    `-x`, `a += b` (which must give back a itself)."""
    fn = getattr(operator, name)

    def call(lib, inputs: dict, args: dict):
        if name in UNARY_OPERATORS:
            return fn(*inputs.values())
        a, b = _two_operands(inputs, args)
        result = fn(a, b)
        if name in INPLACE_OPERATORS and result is not a:
            raise AssertionError(f"{name} did not give back its left operand")
        return result

    return call


# One line per op: the manifest's op name -> how to call it. Ops of families still being written
# have entries too; a manifest case whose op is missing here fails loudly (see adapter_for).
BINARY_OPS = (
    "add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum", "minimum",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor",
)  # fmt: skip
UNARY_OPS = (
    "neg", "abs", "sign", "relu", "floor", "ceil", "round", "trunc", "square", "reciprocal",
    "logical_not", "bitwise_not", "isnan", "isinf", "isfinite", "sqrt", "rsqrt", "exp", "exp2",
    "expm1", "log", "log2", "log1p", "sin", "cos", "tan", "tanh", "sigmoid", "silu", "erf", "gelu",
)  # fmt: skip
INPLACE_OPS = (
    "add_", "sub_", "mul_", "div_", "pow_", "floor_divide_", "remainder_", "clamp_", "copy_",
    "fill_", "zero_", "masked_fill_", "cumsum_", "cumprod_", "tril_", "triu_",
)  # fmt: skip
REDUCTION_OPS = (
    "sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "argmax", "argmin", "all",
    "any", "norm", "logsumexp", "count_nonzero",
)  # fmt: skip
FUNCTION_OPS = (
    "where", "clamp", "masked_fill", "equal", "allclose", "matmul", "mm", "bmm", "dot", "outer",
    "take_along_dim", "nonzero", "cumsum", "cumprod",
    "sort", "argsort", "topk", "tril", "triu", "flip", "roll", "softmax", "log_softmax",
    "cross_entropy", "zeros_like", "ones_like", "full_like",
)  # fmt: skip
VIEW_OPS = (
    "transpose", "narrow", "select", "unsqueeze", "squeeze", "flatten", "clone", "contiguous",
)  # fmt: skip

UNARY_OPERATORS = ("neg", "invert", "abs")
INPLACE_OPERATORS = ("iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow")
OPERATORS = (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_", "xor",
    "lt", "le", "gt", "ge", "eq", "ne", *UNARY_OPERATORS, *INPLACE_OPERATORS,
)  # fmt: skip

REGISTRY: dict[str, Adapter] = {
    **{name: binary(name) for name in BINARY_OPS},
    **{name: function(name) for name in UNARY_OPS + REDUCTION_OPS + FUNCTION_OPS},
    **{name: method(name) for name in INPLACE_OPS + VIEW_OPS},
    "gelu_tanh": gelu_tanh,
    "to": to_dtype,
    "permute": method("permute", star="dims"),
    "reshape": method("reshape", star="shape"),
    "view": method("view", star="shape"),
    "expand": method("expand", star="sizes"),
    **{name: dim_second(name) for name in ("index_select", "gather", "scatter_add", "index_add")},
    **{name: dim_second(name, as_method=True) for name in ("index_add_", "scatter_add_")},
    "cat": sequence_of_inputs("cat"),
    "stack": sequence_of_inputs("stack"),
    "layer_norm": first_then_keywords("layer_norm"),
    **{name: function(name) for name in ("arange", "linspace", "eye", "full")},
    **{f"operator_{name.rstrip('_')}": python_operator(name) for name in OPERATORS},
    "getitem": getitem,
    "setitem": setitem,
    "scalar_tensor": function("scalar_tensor", star="s"),  # PyTorch calls the value s
    "unflatten": method("unflatten"),
    "as_strided": method("as_strided"),
    "expand_as": method("expand_as"),
    "zeros": function("zeros", star="size"),
    "ones": function("ones", star="size"),
}


def adapter_for(op: str) -> Adapter:
    """The registry entry of op; KeyError saying so when the op was never registered."""
    try:
        return REGISTRY[op]
    except KeyError:
        raise KeyError(f"no golden op registered for {op!r}: add it to REGISTRY") from None


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
    expected = getattr(lib, KAEL_ERRORS[case.error])
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
