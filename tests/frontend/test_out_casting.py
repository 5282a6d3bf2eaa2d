"""out= of another dtype than the result's, as torch takes it: the TensorIterator ops (the
binary ops, comparisons and logic, unary float ops, clamp with Tensor bounds, the special
and math functions) compute in their common dtype and cast the result into any out the
result casts to (torch's canCast: no float into an integral or bool out, nothing but
bool into bool); the ops torch builds otherwise (neg, abs, floor, clamp with numbers,
heaviside, ldexp, ...) refuse any other dtype. Both sides of each rule, against torch."""

import functools
import warnings

import numpy as np
import pytest
import torch
from kernel_helpers import TORCH_DTYPES

import kael

DTYPES = {
    name: (getattr(kael, name), TORCH_DTYPES[getattr(kael, name)])
    for name in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool")
}
INPUTS = ("float32", "int64", "float16", "bool")
VALUES = np.array([[0.3, -1.7, 2.5, 0.0], [4.25, -0.5, 1.0, 3.75], [-2.0, 0.75, 6.5, -3.25]])


def _input(name: str, shift: float = 0.0) -> tuple:
    values = VALUES + shift
    if name == "bool":
        values = values > 0.5
    t = torch.from_numpy(values).to(DTYPES[name][1])
    return kael.from_numpy(t.numpy()), t


def _positive(name: str) -> tuple:
    """Inputs in (0, 1) where the op wants them (logit, erfinv); ints and bools as given."""
    if name in ("int64", "bool"):
        return _input(name)
    t = torch.from_numpy(np.abs(VALUES) / 8 + 0.05).to(DTYPES[name][1])
    return kael.from_numpy(t.numpy()), t


# the functions called plainly: f(a, b, out=o), f(a, out=o) (kael's or torch's; kael.special's
# or torch.special's under their "special." names)
_BINARY = (
    "add", "mul", "div", "remainder", "maximum", "eq", "lt", "logical_and", "bitwise_and",
    "atan2", "hypot", "xlogy", "logaddexp", "fmax", "nextafter", "gcd", "heaviside", "igammac",
    "special.xlog1py", "special.zeta", "special.gammainc",
)  # fmt: skip
_UNARY = (
    "exp", "sqrt", "sigmoid", "square", "logical_not", "asin", "sinh", "log10", "erfinv",
    "lgamma", "deg2rad", "logit", "neg", "abs", "floor", "sign", "frac", "nan_to_num",
    "signbit", "special.expit", "special.ndtri", "special.i0",
)  # fmt: skip


def _ops(L):
    """op name -> call(a, b, out): the same call for kael (L = kael) and torch."""

    def plain(name: str, operands: int):
        namespace, _, name = name.rpartition(".")
        f = getattr(L.special if namespace else L, name)
        return name, lambda a, b, o: f(*(a, b)[:operands], out=o)

    return {
        **dict(plain(n, 2) for n in _BINARY),
        **dict(plain(n, 1) for n in _UNARY),
        "sub_alpha": lambda a, b, o: L.sub(a, b, alpha=2, out=o),
        "div_floor": lambda a, b, o: L.div(a, b, rounding_mode="floor", out=o),
        "add_number": lambda a, b, o: L.add(a, 2, out=o),
        "pow": lambda a, b, o: L.pow(a, 2, out=o),
        "lerp": lambda a, b, o: L.lerp(a, b, 0.25, out=o),
        "addcmul": lambda a, b, o: L.addcmul(a, a, b, out=o),
        "cat": lambda a, b, o: L.cat([a, b], out=o),
        "stack": lambda a, b, o: L.stack([a, b], out=o),
        "diff": lambda a, b, o: L.diff(a, out=o),
        "clamp_tensors": lambda a, b, o: L.clamp(a, b, b + 1, out=o),
        "multigammaln": lambda a, b, o: L.special.multigammaln(a + 3, 2, out=o),
        "clamp_numbers": lambda a, b, o: L.clamp(a, 0, 1, out=o),
        "clamp_min_number": lambda a, b, o: L.clamp_min(a, 0.5, out=o),
        "where": lambda a, b, o: L.where(a > 0, a, b, out=o),
        "index_select": lambda a, b, o: L.index_select(a, 0, L.tensor([2, 0]), out=o),
        "lerp_tensor_weight": lambda a, b, o: L.lerp(a, b, L.full_like(b, 0.25), out=o),
        "lerp_0d_weight": lambda a, b, o: L.lerp(a, b, L.tensor(0.25, dtype=b.dtype), out=o),
        "ldexp": lambda a, b, o: L.ldexp(a, b, out=o),
        "hstack": lambda a, b, o: L.hstack([a, b], out=o),
        "addr": lambda a, b, o: L.addr(a[:, :3], a[:, 0], b[0, :3], out=o),
        "mm": lambda a, b, o: L.mm(a, b.t(), out=o),
    }


_IN_UNIT_INTERVAL = {"logit", "erfinv", "ndtri", "asin", "zeta", "gammainc", "igammac"}
_OUT_SHAPES = {
    "hstack": (3, 8),
    "addr": (3, 3),
    "cat": (6, 4),
    "stack": (2, 3, 4),
    "diff": (3, 3),
    "index_select": (2, 4),
    "mm": (3, 3),
}
# bool + bool is the book's count in int64 (kael), torch's logical or; kael's ndtri takes
# and zeta take float16 (torch has no kernel for it): not compared here
_NOT_TORCHS = {("add", "bool"), ("add_number", "bool"), ("ndtri", "float16"), ("zeta", "float16")}


def _outcome(call, *args):
    try:
        return call(*args), None
    except Exception as e:  # noqa: BLE001 (both libraries' errors are compared)
        return None, e


def _same_as_torch(case: str, k_run, t_run, k_out, t_out, tol: float) -> None:
    """k_run() and t_run() (each writing its out) both refuse (kael with a typed error), or
    both write their out, to within tol (exactly for an integral or bool out)."""
    want, t_err = _outcome(t_run)
    got, k_err = _outcome(k_run)
    if t_err is not None:
        assert isinstance(k_err, kael.Error), f"{case}: torch refuses ({t_err}), kael {k_err!r}"
        return
    assert k_err is None, f"{case}: torch takes it, kael raised {k_err!r}"
    assert got is k_out and got.dtype is k_out.dtype and got.shape == tuple(want.shape), case
    tol = tol if t_out.dtype.is_floating_point or t_out.dtype.is_complex else 0
    np.testing.assert_allclose(
        got.numpy() if got.dtype.is_complex else got.to(kael.float64).numpy(),
        want.numpy() if want.dtype.is_complex else want.to(torch.float64).numpy(),
        rtol=tol,
        atol=tol,
        err_msg=case,
    )


@pytest.mark.parametrize("op", list(_ops(torch)))
def test_out_of_another_dtype_is_cast_or_refused_as_torchs(op):
    k_call, t_call = _ops(kael)[op], _ops(torch)[op]
    shape = _OUT_SHAPES.get(op, VALUES.shape)
    for source in INPUTS:
        if (op, source) in _NOT_TORCHS:
            continue
        (ka, ta), (kb, tb) = (
            (_positive(source), _positive(source))
            if op in _IN_UNIT_INTERVAL
            else (_input(source), _input(source, 0.625))
        )
        for target, (kd, td) in DTYPES.items():
            k_out, t_out = kael.zeros(*shape, dtype=kd), torch.zeros(*shape, dtype=td)
            # kael's float16 ops are within an ulp of torch's, which may move a bfloat16 one
            half = 2 in (td.itemsize, DTYPES[source][1].itemsize)
            tol = 8e-3 if td is torch.bfloat16 else 2e-3 if half else 1e-6
            _same_as_torch(
                f"{op}({source}, out={target})",
                functools.partial(k_call, ka, kb, k_out),
                functools.partial(t_call, ta, tb, t_out),
                k_out,
                t_out,
                tol,
            )


def test_cast_follows_the_common_dtype_rounding_first():
    """float16 operands round their sum to float16 before a float32 out= takes it (torch's
    CPU iterator copies its float16 result), and exp of an int computes in float32."""
    a = torch.tensor([1.001, 2049.0, 0.1], dtype=torch.float16)
    want = torch.add(a, a, out=torch.empty(3))
    got = kael.add(kael.from_numpy(a.numpy()), kael.from_numpy(a.numpy()), out=kael.empty(3))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    ints = torch.tensor([1, 3])
    want = torch.exp(ints, out=torch.empty(2, dtype=torch.float64))
    got = kael.exp(kael.tensor([1, 3]), out=kael.empty(2, dtype=kael.float64))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert got.numpy()[0] != np.exp(1.0)  # float32's exp, widened


def test_cast_out_is_resized_and_keeps_its_layout():
    x = kael.tensor(VALUES, dtype=kael.float32)
    out = kael.zeros(4, 3, dtype=kael.float64).t()  # column-major
    kael.mul(x, 2, out=out)
    assert out._impl.strides == (1, 3)
    np.testing.assert_array_equal(out.numpy(), VALUES.astype(np.float32) * 2)
    empty = kael.empty(0, dtype=kael.float64)
    kael.sqrt(kael.tensor([4.0, 9.0]), out=empty)
    assert empty.shape == (2,) and empty.tolist() == [2.0, 3.0]


def test_cast_out_may_alias_an_operand():
    x = kael.tensor([1.5, 2.5], dtype=kael.float64)
    y = kael.tensor([1.0, 2.0])
    kael.add(y, x, out=y)  # float64 sum, cast into y's float32
    assert y.tolist() == [2.5, 4.5] and y.dtype is kael.float32


def test_refused_cast_names_both_dtypes():
    with pytest.raises(
        kael.TypeError, match="float32 can't be cast to the desired output type int64"
    ):
        kael.add(kael.ones(2), kael.ones(2), out=kael.empty(2, dtype=kael.int64))
    with pytest.raises(
        kael.TypeError, match="out has dtype float64 but the result has dtype float32"
    ):
        kael.neg(kael.ones(2), out=kael.empty(2, dtype=kael.float64))
    with pytest.raises(kael.TypeError, match="int64 can't be cast to the desired output type bool"):
        kael.mul(kael.ones(2, dtype=kael.int64), 3, out=kael.empty(2, dtype=kael.bool))


def _complex_ops(L):
    return {
        "add": lambda a, o: L.add(a, a, out=o),
        "div": lambda a, o: L.div(a, a + 1, out=o),
        "pow": lambda a, o: L.pow(a, 2.5, out=o),
        "pow_zero": lambda a, o: L.pow(a, 0, out=o),
        "eq": lambda a, o: L.eq(a, a, out=o),
        "exp": lambda a, o: L.exp(a, out=o),
        "sqrt": lambda a, o: L.sqrt(a, out=o),
        "reciprocal": lambda a, o: L.reciprocal(a, out=o),
        "square": lambda a, o: L.square(a, out=o),
        "logical_not": lambda a, o: L.logical_not(a, out=o),
        "angle": lambda a, o: L.angle(a, out=o),
        "abs": lambda a, o: L.abs(a, out=o),
        "neg": lambda a, o: L.neg(a, out=o),
        "sgn": lambda a, o: L.sgn(a, out=o),
    }


@pytest.mark.parametrize("op", list(_complex_ops(torch)))
def test_complex_out_of_another_dtype_is_cast_or_refused_as_torchs(op):
    """A complex64 result casts into a complex128 out (never a real one); abs's real result
    into a real out only; neg and sgn refuse any other dtype."""
    values = np.array([1 + 2j, -0.5 + 0.25j, 3 - 1j], dtype=np.complex64)
    k_call, t_call = _complex_ops(kael)[op], _complex_ops(torch)[op]
    for kd, td in [
        (kael.complex128, torch.complex128),
        (kael.complex64, torch.complex64),
        (kael.float64, torch.float64),
        (kael.bool, torch.bool),
    ]:
        k_out, t_out = kael.zeros(3, dtype=kd), torch.zeros(3, dtype=td)
        with warnings.catch_warnings():  # torch's complex-to-real copy warns
            warnings.simplefilter("ignore")
            _same_as_torch(
                f"{op}(complex64, out={kd})",
                functools.partial(k_call, kael.from_numpy(values), k_out),
                functools.partial(t_call, torch.from_numpy(values), t_out),
                k_out,
                t_out,
                1e-6,
            )


def _reductions(L):
    return {
        "sum": lambda x, o: L.sum(x, 1, out=o),
        "prod": lambda x, o: L.prod(x, 1, out=o),
        "nansum": lambda x, o: L.nansum(x, 1, out=o),
        "mean": lambda x, o: L.mean(x, 1, out=o),
        "nanmean": lambda x, o: L.nanmean(x, 1, out=o),
        "cumsum": lambda x, o: L.cumsum(x, 1, out=o),
        "cumprod": lambda x, o: L.cumprod(x, 1, out=o),
        "var": lambda x, o: L.var(x, 1, out=o),
        "std": lambda x, o: L.std(x, 1, out=o),
        "logsumexp": lambda x, o: L.logsumexp(x, 1, out=o),
        "any": lambda x, o: L.any(x, 1, out=o),
        "all": lambda x, o: L.all(x, 1, out=o),
        "amax": lambda x, o: L.amax(x, 1, out=o),
        "argmax": lambda x, o: L.argmax(x, 1, out=o),
        "sum_dtype": lambda x, o: L.sum(x, 1, dtype=L.float64, out=o),
    }


# float16 sources: torch rounds logsumexp's exponentials to float16 (kael's are float32)
_LOOSE = {"logsumexp": 2e-4}
# torch's all and any into a uint8 out read a float input converted to uint8 (0.5 is false
# to all, true to any); kael reads each value's truth: not compared
_QUIRKS = {("all", "float32", "uint8"), ("all", "float16", "uint8"), ("any", "float32", "uint8")}


@pytest.mark.parametrize("op", list(_reductions(torch)))
def test_reduction_out_dtype_is_the_one_torch_computes_in(op):
    """sum, prod, nansum, cumsum and cumprod given out= and no dtype= compute in out's dtype
    (a float32 sum into a float64 out adds in float64, into an int64 one truncates each
    value first); mean and nanmean in a floating out's; var, std and logsumexp cast their
    result; any and all write bool or uint8; amax and argmax take their own dtype only."""
    k_call, t_call = _reductions(kael)[op], _reductions(torch)[op]
    for source in INPUTS:
        ka, ta = _input(source)
        for target, (kd, td) in DTYPES.items():
            if (op, source, target) in _QUIRKS:
                continue
            k_out, t_out = kael.empty(0, dtype=kd), torch.empty(0, dtype=td)
            if td is torch.bfloat16 or td is torch.float16:
                tol = 8e-3 if td is torch.bfloat16 else 2e-3
            else:
                tol = _LOOSE.get(op, 2e-3) if source == "float16" else 1e-6
            _same_as_torch(
                f"{op}({source}, out={target})",
                functools.partial(k_call, ka, k_out),
                functools.partial(t_call, ta, t_out),
                k_out,
                t_out,
                tol,
            )


def test_sum_into_a_float64_out_adds_in_float64():
    x = [[1.0000001, 1e8, 0.1]]
    want = torch.sum(torch.tensor(x), 1, out=torch.empty(0, dtype=torch.float64))
    got = kael.sum(kael.tensor(x), 1, out=kael.empty(0, dtype=kael.float64))
    assert got.tolist() == want.tolist()
    assert got.tolist() != kael.sum(kael.tensor(x), 1).to(kael.float64).tolist()


@pytest.mark.parametrize("op", ["sum", "nansum", "prod", "mean", "cumsum", "cumprod", "var"])
@pytest.mark.parametrize("source", ["float32", "int64"])
def test_reduction_of_a_real_input_into_an_empty_complex_out_as_torch(op, source):
    """sum, prod, mean, cumsum and cumprod compute in the complex dtype out gives them (out
    resized from empty); nansum of a float input, var and mean of an int one refuse."""
    ka, ta = _input(source)
    k_out, t_out = kael.empty(0, dtype=kael.complex64), torch.empty(0, dtype=torch.complex64)
    _same_as_torch(
        f"{op}({source}, out=complex64)",
        functools.partial(getattr(kael, op), ka, 1, out=k_out),
        functools.partial(getattr(torch, op), ta, 1, out=t_out),
        k_out,
        t_out,
        1e-6,
    )


def test_a_refused_cast_leaves_out_as_it_was():
    out = kael.zeros(1, dtype=kael.int64)
    for call in (lambda: kael.atan2(kael.ones(2, 3), kael.ones(2, 3), out=out),
                 lambda: kael.add(kael.ones(2, 3), 1, out=out)):  # fmt: skip
        with pytest.raises(kael.TypeError, match="can't be cast"):
            call()
        assert out.shape == (1,) and out.tolist() == [0]


@pytest.mark.parametrize(
    "call",
    [
        lambda x: kael.add(x, kael.ones(3, 1), out=x),
        lambda x: kael.where(kael.ones(2, 1, dtype=kael.bool), x, 0.0, out=x),
        lambda x: kael.mul(x, x.unsqueeze(1), out=x),
        lambda x: kael.sum(x.reshape(2, 3), 0, keepdim=True, out=x.reshape(2, 3)),
        lambda x: kael.mean(x.reshape(2, 3), 1, out=x.reshape(2, 3)),
        lambda x: kael.prod(x.reshape(2, 3), 1, out=x.reshape(2, 3)),
    ],
    ids=["add", "where", "mul", "sum", "mean", "prod"],
)
def test_an_out_that_is_an_input_and_must_grow_or_shrink_is_refused(call):
    """Resizing it would change the input before the op reads it (rows read from memory
    never written): torch's iterator refuses it for elementwise ops."""
    x = kael.arange(6.0)
    with pytest.raises(kael.ValueError, match=r"shares memory with an input, so it cannot be"):
        call(x)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and x.shape == (6,)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        t = torch.arange(6.0)
        torch.add(t, torch.ones(3, 1), out=t)


def test_an_out_in_the_inputs_storage_but_clear_of_it_may_still_be_resized():
    base = kael.arange(8.0)
    with pytest.warns(UserWarning, match="was resized"):
        kael.add(base[:3], 1, out=base[5:7])
    assert base.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0]
    base = kael.arange(8.0)
    with pytest.warns(UserWarning, match="was resized"):
        kael.sum(base[:4].reshape(2, 2), 0, out=base[4:5])
    assert base.tolist() == [0.0, 1.0, 2.0, 3.0, 2.0, 4.0, 6.0, 7.0]
