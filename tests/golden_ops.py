"""The golden op adapters: one registry entry per manifest op name, saying how to call it.

Every adapter is generic over `lib`, the library module (torch when golden/generate.py writes
the expected values, kael when tests/test_golden.py replays them): it gets lib, the case's
inputs (views applied) and its decoded args, and returns the op's result.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

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


def functional(name: str) -> Adapter:
    """lib.nn.functional.NAME(first input, the other inputs by name, **args): nn.functional's
    own signature (torch.max_pool2d has no return_indices, torch.kl_div takes its reduction as
    an int). An in-place spelling (elu_) must give back its input; where the running mean and
    variance are inputs (batch_norm, instance_norm) they come back after the result, so their
    in-place update is compared too."""

    def call(lib, inputs: dict, args: dict):
        first, *rest = inputs
        fn = getattr(lib.nn.functional, name, None) or resolve(lib, name)
        result = fn(inputs[first], **{k: inputs[k] for k in rest}, **_with_dtypes(lib, args))
        result = _checked_inplace(name, inputs[first], result)
        stats = tuple(inputs[k] for k in ("running_mean", "running_var") if k in inputs)
        return (result, *stats) if stats else result

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


def attribute(name: str) -> Adapter:
    """x.NAME, a property giving a view (x.T, x.mT)."""

    def call(lib, inputs: dict, args: dict):
        (x,) = inputs.values()
        return getattr(x, name)

    return call


def tensor_from_list(lib, inputs: dict, args: dict):
    """lib.tensor(x.tolist(), **args): nested Python lists back into a tensor, its dtype
    inferred from the Python values unless given."""
    (x,) = inputs.values()
    return lib.tensor(x.tolist(), **_with_dtypes(lib, args))


def result_type(lib, inputs: dict, args: dict):
    """An empty tensor of lib.result_type(inputs..., the Python scalar `other` if given)."""
    return lib.zeros(0, dtype=lib.result_type(*inputs.values(), *_scalar_operand(dict(args))))


def promote_types(lib, inputs: dict, args: dict):
    """An empty tensor of lib.promote_types(the dtypes named `a` and `b`)."""
    return lib.zeros(0, dtype=lib.promote_types(getattr(lib, args["a"]), getattr(lib, args["b"])))


def positional(name: str, keywords: tuple = ()) -> Adapter:
    """lib.NAME(*inputs, p0, p1, p2, **other args) (or inputs[0].NAME(...)): the args p0..p2
    are passed by position (torch.split's sections, movedim's dims, tril_indices' sizes, whose
    parameter names differ between overloads); the inputs named in `keywords` go by name
    (histogram's weight); a list or tuple result comes back as a tuple."""

    def call(lib, inputs: dict, args: dict):
        args = _with_dtypes(lib, args)
        pos = [args.pop(k) for k in ("p0", "p1", "p2") if k in args]
        given = [v for k, v in inputs.items() if k not in keywords]
        named = {k: v for k, v in inputs.items() if k in keywords}
        result = resolve(lib, name)(*given, *pos, **named, **args)
        return tuple(result) if isinstance(result, list | tuple) else result

    return call


def linalg(name: str) -> Adapter:
    """lib.linalg.NAME(*inputs, **args) (multi_dot: the inputs as one list); a NamedTuple
    result as a plain tuple."""

    def call(lib, inputs: dict, args: dict):
        fn = getattr(lib.linalg, name)
        tensors = list(inputs.values())
        result = fn(tensors, **args) if name == "multi_dot" else fn(*tensors, **args)
        return tuple(result) if isinstance(result, tuple) else result

    return call


def _column_signs(lib, Q):
    """Each column's sign that makes its entry of largest magnitude positive ([..., 1, k])."""
    at = Q.abs().argmax(-2, keepdim=True)
    return lib.where(Q.gather(-2, at) < 0, -1.0, 1.0).to(Q.dtype)


def linalg_eigh(lib, inputs: dict, args: dict):
    """eigh's (values, vectors), each vector's sign fixed by its largest entry: a vector is
    the decomposition's only up to sign, which LAPACK and kael may choose apart."""
    L, Q = lib.linalg.eigh(*inputs.values(), **args)
    return L, Q * _column_signs(lib, Q)


def linalg_svd(lib, inputs: dict, args: dict):
    """svd's (U, S, Vh), each pair of singular vectors' sign fixed by U's column."""
    U, S, Vh = lib.linalg.svd(*inputs.values(), **args)
    k = S.shape[-1]
    signs = _column_signs(lib, U[..., :k])
    return U[..., :k] * signs, S, Vh[..., :k, :] * signs.mT


def dim_second_tuple(name: str) -> Adapter:
    """dim_second's call with a namedtuple result given back as a plain tuple."""

    def call(lib, inputs: dict, args: dict):
        result = dim_second(name)(lib, inputs, args)
        return tuple(result) if isinstance(result, list | tuple) else result

    return call


def div_rounding(mode: str) -> Adapter:
    """lib.div(a, b, rounding_mode=mode): the op names div_trunc and div_floor."""

    def call(lib, inputs: dict, args: dict):
        return lib.div(*_two_operands(inputs, args), rounding_mode=mode)

    return call


def einsum(lib, inputs: dict, args: dict):
    """lib.einsum(equation, *inputs); the manifest writes the equation's commas as '+'."""
    return lib.einsum(args["equation"].replace("+", ","), *inputs.values())


def tensordot(lib, inputs: dict, args: dict):
    """lib.tensordot(a, b, dims): an int, or the lists dims_a and dims_b."""
    args = dict(args)
    if "dims_a" in args:
        args["dims"] = (list(args.pop("dims_a")), list(args.pop("dims_b")))
    return lib.tensordot(*inputs.values(), **args)


def index_put(lib, inputs: dict, args: dict):
    """lib.index_put(x, (i0, i1, ...), v, **args): the inputs are x, the index tensors, v."""
    x, *indices, values = inputs.values()
    return lib.index_put(x, tuple(indices), values, **args)


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

# torch.nn.functional's ops, called by their nn.functional signature (see functional).
ACTIVATION_OPS = (
    "elu", "selu", "celu", "leaky_relu", "relu6", "hardtanh", "hardsigmoid", "hardswish", "mish",
    "softplus", "softsign", "logsigmoid", "tanhshrink", "threshold", "hardshrink", "softshrink",
    "glu", "prelu", "softmin", "elu_", "celu_", "selu_", "leaky_relu_", "hardtanh_", "threshold_",
    "relu_",
)  # fmt: skip
LOSS_OPS = (
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "margin_ranking_loss",
    "hinge_embedding_loss", "triplet_margin_loss", "cosine_embedding_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "nll_loss", "cosine_similarity",
    "pairwise_distance",
)  # fmt: skip
LAYER_OPS = (
    "linear", "bilinear", "embedding", "one_hot", "normalize", "rms_norm", "pixel_shuffle",
    "pixel_unshuffle", "batch_norm", "instance_norm", "group_norm", "local_response_norm",
    "scaled_dot_product_attention",
)  # fmt: skip
SPATIAL_OPS = (
    "pad", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "unfold", "fold", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
    "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
    "interpolate",
)  # fmt: skip
NN_OPS = ACTIVATION_OPS + LOSS_OPS + LAYER_OPS + SPATIAL_OPS
# PyTorch's other spellings of ops the grids above cover, and the dtype-named casts.
ALIAS_BINARY_OPS = (
    "divide", "multiply", "subtract", "true_divide", "greater", "greater_equal", "less",
    "less_equal", "not_equal",
)  # fmt: skip
CAST_METHODS = (
    "byte", "char", "short", "int", "long", "half", "float", "double", "bool", "bfloat16",
)  # fmt: skip

# The tensor functions added after the first grids (golden/patterns_more.py).
POSITIONAL_OPS = (
    "split", "chunk", "tensor_split", "unbind", "tile", "repeat_interleave", "movedim",
    "swapaxes", "t", "diagonal", "diag", "diag_embed", "tril_indices", "triu_indices",
    "broadcast_to", "atleast_1d", "atleast_2d", "atleast_3d", "ravel", "meshgrid",
    "deg2rad", "rad2deg", "frac", "sgn", "log10", "nan_to_num", "lerp", "isclose", "sinh",
    "cosh", "asinh", "acosh", "atanh", "atan", "asin", "acos",
    "nansum", "nanmean", "aminmax", "std_mean", "var_mean", "logcumsumexp", "cummax", "cummin",
    "median", "nanmedian", "quantile", "nanquantile", "mode", "searchsorted", "bucketize",
    "kron", "cdist", "bincount", "histc", "unique", "unique_consecutive",
    "masked_select", "argwhere",
    "erfc", "erfinv", "lgamma", "digamma", "clamp_min", "clamp_max", "moveaxis", "swapdims",
    "hsplit", "vsplit", "dsplit", "broadcast_tensors", "select_scatter", "slice_scatter",
    "diagonal_scatter", "as_strided_scatter",
    "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh",
)  # fmt: skip
MORE_BINARY_OPS = (
    "xlogy", "logaddexp", "logaddexp2", "hypot", "atan2", "fmod", "copysign",
    "bitwise_left_shift", "bitwise_right_shift", "arctan2",
)  # fmt: skip
DIM_SECOND_OPS = ("scatter", "scatter_reduce", "index_fill", "index_copy")
# torch.linalg's functions, each golden op named linalg_NAME.
LINALG_OPS = (
    "det", "slogdet", "inv", "solve", "cholesky", "lu_factor", "solve_triangular", "qr",
    "eigvalsh", "svdvals", "matrix_rank", "pinv", "matrix_norm", "vector_norm", "cond",
    "matrix_power", "cross", "vecdot", "multi_dot", "norm", "lstsq",
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
    **{name: functional(name) for name in ("layer_norm",) + NN_OPS},
    **{name: function(name) for name in ("arange", "linspace", "eye", "full")},
    **{f"operator_{name.rstrip('_')}": python_operator(name) for name in OPERATORS},
    **{f"linalg_{name}": linalg(name) for name in LINALG_OPS},
    "getitem": getitem,
    "setitem": setitem,
    "scalar_tensor": function("scalar_tensor", star="s"),  # PyTorch calls the value s
    "unflatten": method("unflatten"),
    "as_strided": method("as_strided"),
    "expand_as": method("expand_as"),
    "zeros": function("zeros", star="size"),
    "ones": function("ones", star="size"),
    **{name: binary(name) for name in ALIAS_BINARY_OPS + MORE_BINARY_OPS},
    **{name: function(name) for name in ("absolute", "negative", "clip")},
    **{name: method(name) for name in CAST_METHODS + ("clip_", "item")},
    **{name: method(name) for name in ("bitwise_and_", "bitwise_or_", "bitwise_xor_")},
    **{name: attribute(name) for name in ("T", "mT")},
    "tensor": tensor_from_list,
    "result_type": result_type,
    "promote_types": promote_types,
    "histogram": positional("histogram", keywords=("weight",)),
    **{name: positional(name) for name in POSITIONAL_OPS},
    "repeat": method("repeat", star="sizes"),
    **{name: dim_second_tuple(name) for name in DIM_SECOND_OPS},
    "div_trunc": div_rounding("trunc"),
    "div_floor": div_rounding("floor"),
    "einsum": einsum,
    "tensordot": tensordot,
    "index_put": index_put,
    "linalg_eigh": linalg_eigh,
    "linalg_svd": linalg_svd,
}


def adapter_for(op: str) -> Adapter:
    """The registry entry of op; KeyError saying so when the op was never registered."""
    try:
        return REGISTRY[op]
    except KeyError:
        raise KeyError(f"no golden op registered for {op!r}: add it to REGISTRY") from None
