"""torch.nn.functional's activations, dropout and friends against PyTorch: values, dtype
and shape over every dtype and layout, their parameters and inplace=, and typed errors."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from kernel_helpers import TORCH_DTYPES
from philox_reference import word_of

import kael
import kael.nn.functional as KF
from kael.frontend import activations
from kael.frontend import random as kr
from kael.runtime import dtypes

VALUES = [-30.0, -3.0, -1.0, -0.5, -0.0, 0.0, 0.25, 1.0, 2.5, 7.0, 30.0, math.nan, math.inf]
# float32 math may differ from PyTorch's by an ulp or two; half types by one of their steps
# Arguments an activation cannot go without (PyTorch's threshold has no defaults).
REQUIRED = {"threshold": (0.5, -1.0)}
TOL = {kael.float32: 2e-6, kael.float64: 1e-13, kael.float16: 2**-10, kael.bfloat16: 2**-7}


def pair(values, dtype):
    t = torch.tensor(values, dtype=torch.float64).to(TORCH_DTYPES[dtype])
    return kael.from_dlpack(t.clone()), t


def check(k, t, dtype=None):
    assert isinstance(k, kael.Tensor)
    assert k.shape == tuple(t.shape)
    assert TORCH_DTYPES[k.dtype] == t.dtype, (k.dtype, t.dtype)
    got = torch.from_dlpack(k.contiguous()).double()
    want = t.double()
    tol = TOL.get(k.dtype, 0)
    torch.testing.assert_close(got, want, rtol=tol, atol=tol * 1e-3, equal_nan=True)


def run_both(fk, ft):
    try:
        want = ft()
    except (RuntimeError, TypeError, ValueError, NotImplementedError):
        with pytest.raises(kael.Error):
            fk()
        return None, None
    return fk(), want


@pytest.mark.parametrize("dtype", dtypes.ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(activations.ACTIVATIONS))
def test_activation_matches_torch_on_every_dtype(name, dtype):
    values = VALUES if dtype.is_floating_point else [-3, -1, 0, 1, 2, 7]
    values = [bool(v) for v in values] if dtype is kael.bool else values
    if dtype is kael.uint8:
        values = [0, 1, 2, 7, 200]
    k, t = pair(values, dtype)
    args = REQUIRED.get(name, ())
    got, want = run_both(lambda: getattr(KF, name)(k, *args), lambda: getattr(TF, name)(t, *args))
    if want is not None:
        check(got, want)


PARAMS = {
    "threshold": ((0.6, -2.0), {"threshold": -0.5, "value": 7.0}),
    "hardshrink": ((0.6,), {"lambd": 1.5}),
    "softshrink": ((0.6,), {"lambd": 1.5}),
    "elu": ((0.5,), {"alpha": 2.0}),
    "celu": ((0.3,), {"alpha": 1.5}),
    "leaky_relu": ((0.2,), {"negative_slope": 0.05}),
    "hardtanh": ((-0.5, 2.0), {"min_val": -2.0, "max_val": 0.5}),
    "softplus": ((2.0, 5.0), {"beta": 0.5, "threshold": 3.0}),
}


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_parameters_by_position_and_keyword_match_torch(name):
    args, kwargs = PARAMS[name]
    k, t = pair(VALUES, kael.float32)
    check(getattr(KF, name)(k, *args), getattr(TF, name)(t, *args))
    check(getattr(KF, name)(k, **kwargs), getattr(TF, name)(t, **kwargs))


LAYOUTS = {
    "transposed": lambda x: x.transpose(0, 1),
    "sliced": lambda x: x[1:, ::2],
    "expanded": lambda x: x[:1].expand(3, 4),
    "0-d": lambda x: x[1, 2],
    "empty": lambda x: x[:0],
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(activations.ACTIVATIONS))
def test_activation_over_every_layout(name, layout):
    k, t = pair(VALUES[:12], kael.float32)
    kx, tx = LAYOUTS[layout](k.view(3, 4)), LAYOUTS[layout](t.view(3, 4))
    args = REQUIRED.get(name, ())
    check(getattr(KF, name)(kx, *args), getattr(TF, name)(tx, *args))


@pytest.mark.parametrize("name", sorted(n for n, a in activations.ACTIVATIONS.items() if a.inplace))
def test_inplace_writes_the_input_as_torch(name):
    k, t = pair(VALUES, kael.float32)
    version = k._impl.storage.version
    args = REQUIRED.get(name, ())
    assert getattr(KF, name)(k, *args, inplace=True) is k
    getattr(TF, name)(t, *args, inplace=True)
    check(k, t)
    assert k._impl.storage.version > version
    strided = kael.zeros(4, 6)[:, ::2]
    getattr(KF, name)(strided, *args, inplace=True)  # a strided view, in its own layout


def test_inplace_refuses_a_dtype_change_and_read_only_inputs():
    with pytest.raises(kael.TypeError, match="inplace"):
        KF.hardtanh(kael.arange(3), inplace=1)
    with pytest.raises(kael.TypeError, match="not implemented for int64"):
        KF.elu(kael.arange(3))
    with pytest.raises(kael.Error):
        KF.elu(kael.ones(3).expand(2, 3), inplace=True)  # overlapping elements


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("celu", (0.0,), "alpha cannot be 0"),
        ("celu_", (0.0,), "alpha cannot be 0"),
        ("hardtanh", (1.0, -1.0), "min_val cannot be greater than max_val"),
        ("softshrink", (-0.5,), "lambda must be in range"),
    ],
)
def test_parameter_values_torch_refuses_are_refused(name, args, message):
    k, t = pair(VALUES, kael.float32)
    with pytest.raises((RuntimeError, ValueError)):
        getattr(TF, name)(t.clone(), *args)
    with pytest.raises(kael.ValueError, match=message):
        getattr(KF, name)(k.clone(), *args)


def test_argument_errors_name_the_function():
    x = kael.ones(2)
    with pytest.raises(kael.TypeError, match="unexpected keyword argument 'beta'"):
        KF.elu(x, beta=2.0)
    with pytest.raises(kael.TypeError, match="multiple values for argument 'alpha'"):
        KF.elu(x, 1.0, alpha=2.0)
    with pytest.raises(kael.TypeError, match="at most"):
        KF.selu(x, True, 3)


def test_activations_fuse_inside_compile_with_eagers_values():
    @kael.compile
    def f(x):
        return KF.softplus(KF.elu(x, 0.5) * 2, beta=2.0) + KF.hardswish(x)

    x = kael.randn(64, 33)
    eager = KF.softplus(KF.elu(x, 0.5) * 2, beta=2.0) + KF.hardswish(x)
    assert kael.equal(f(x), eager)
    shown = str(f.inspect(x))
    assert "1 kernels" in shown and "elu" in shown


# ---- glu, prelu, softmin, gumbel_softmax --------------------------------------------------------


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.float16], ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_glu_matches_torch(dtype, dim):
    k, t = pair(np.linspace(-3, 3, 24).tolist(), dtype)
    check(KF.glu(k.view(4, 6), dim), TF.glu(t.view(4, 6), dim))


def test_glu_refuses_an_odd_dim_and_scalars():
    with pytest.raises(kael.ValueError, match="dimension 1 is size 3"):
        KF.glu(kael.ones(2, 3))
    with pytest.raises(kael.ValueError, match="scalars"):
        KF.glu(kael.tensor(1.0))


@pytest.mark.parametrize("weights", [1, 3])
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), (5, 3, 2, 2)])
def test_prelu_matches_torch(shape, weights):
    k, t = pair(np.linspace(-2, 2, int(np.prod(shape))).tolist(), kael.float32)
    kw, tw = pair([0.25, -0.1, 0.5][:weights], kael.float32)
    check(KF.prelu(k.view(shape), kw), TF.prelu(t.view(shape), tw))


def test_prelu_refuses_a_weight_per_other_channels():
    with pytest.raises(kael.ValueError, match="parameter numbers = 2 and channel size = 3"):
        KF.prelu(kael.ones(2, 3), kael.ones(2))


@pytest.mark.parametrize("dim", [0, 1])
def test_softmin_matches_torch(dim):
    k, t = pair(np.linspace(-2, 5, 12).tolist(), kael.float32)
    check(KF.softmin(k.view(3, 4), dim), TF.softmin(t.view(3, 4), dim))


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax_gives_distributions_or_one_hots(hard):
    logits = kael.tensor([[0.0, 3.0, 1.0, -2.0]] * 2000)
    y = KF.gumbel_softmax(logits, tau=0.5, hard=hard)
    assert y.shape == (2000, 4) and y.dtype is kael.float32
    assert np.allclose(y.sum(-1).numpy(), 1.0, atol=1e-5)
    picks = y.argmax(-1).numpy()
    freq = np.bincount(picks, minlength=4) / len(picks)
    expected = np.exp([0.0, 3.0, 1.0, -2.0]) / np.exp([0.0, 3.0, 1.0, -2.0]).sum()
    assert np.allclose(freq, expected, atol=0.04)  # argmax of Gumbel noise: a categorical
    if hard:
        assert set(np.unique(y.numpy())) <= {0.0, 1.0}


# ---- dropout ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype", [kael.float32, kael.float64, kael.float16, kael.bfloat16], ids=str
)
def test_dropout_scales_what_it_keeps_as_torch(dtype):
    k, t = pair(np.linspace(-5, 5, 20000).tolist(), dtype)
    p = 0.3
    out = KF.dropout(k, p)
    kept = out.float().numpy() != 0
    assert abs(1 - kept.mean() - p) < 0.02
    # torch's kept values: x * (ones / (1 - p)) in the dtype
    scaled = (t * torch.ones_like(t).div_(1 - p)).float().numpy()
    nonzero = t.float().numpy() != 0
    np.testing.assert_array_equal(out.float().numpy()[kept], scaled[kept])
    assert not np.any(out.float().numpy()[~kept & nonzero])


def test_dropout_edges_as_torch():
    x = kael.tensor([1.0, math.nan, -2.0])
    assert KF.dropout(x, 0.5, training=False) is x
    assert KF.dropout(x, 0.0) is x
    zeros = KF.dropout(x, 1.0)
    np.testing.assert_array_equal(
        zeros.numpy(), TF.dropout(torch.tensor([1.0, math.nan, -2.0]), 1.0).numpy()
    )
    y = kael.ones(1000)
    assert KF.dropout(y, 0.5, inplace=True) is y and (y.numpy() == 0).any()


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: KF.dropout(kael.ones(3), 1.5), kael.ValueError, "between 0 and 1, but got 1.5"),
        (lambda: KF.dropout(kael.arange(3), 0.5), kael.TypeError, "floating point"),
        (lambda: KF.dropout(kael.ones(3), 0.5, training=2), kael.TypeError, "training"),
    ],
)
def test_dropout_refuses_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(
    "dtype", [kael.float32, kael.float64, kael.float16], ids=str
)  # 16, 8 and 16 lanes (float16 computes in float32)
@pytest.mark.parametrize("n", [1, 5, 64, 1000, 1100], ids=str)
def test_dropout_keeps_where_the_elements_philox_draw_is_below_1_minus_p(n, dtype):
    """Element i keeps when draw 8 base + i (philox_reference.word_of; base: the offset
    rounded up to a multiple of 16 blocks) is below ceil((1 - p) 2**32); a call reserves
    the blocks its draws touch and 15 more, so consecutive calls never share a block."""
    p, seed = 0.3, 0x0123456789ABCDEF
    kael.manual_seed(seed)
    for _ in range(3):
        offset = kr.default_generator.position()[1]
        kept = KF.dropout(kael.ones(n, dtype=dtype), p).numpy() != 0
        base = (offset + 15) // 16 * 16
        limit = math.ceil((1 - p) * 2**32)
        want = [word_of(8 * base + i, seed) < limit for i in range(n)]
        np.testing.assert_array_equal(kept, want)
        touched = n // 128 * 16 + min(n % 128, 16)
        assert kr.default_generator.position()[1] == offset + touched + 15


@pytest.mark.parametrize(("p", "kept"), [(1e-12, 4096), (1 - 1e-12, 0), (1.0, 0)])
def test_dropout_probabilities_at_the_ends_of_the_32_bit_words(p, kept):
    """ceil((1 - p) 2**32) is 2**32 for p below 2**-33 (every word kept) and 0 from p
    above 1 - 2**-33: both ends of the signed 32-bit compare."""
    out = KF.dropout(kael.ones(4096), p)
    assert int((out != 0).sum()) == kept
    assert out.dtype == kael.float32 and out.shape == (4096,)


def test_compiled_dropout_draws_the_eager_masks_call_after_call():
    @kael.compile
    def scaled(x):
        return KF.dropout(x * 2, 0.3)

    x = kael.ones(1001)
    kael.manual_seed(3)
    compiled = [scaled(x), scaled(x)]
    kael.manual_seed(3)
    eager = [KF.dropout(x * 2, 0.3), KF.dropout(x * 2, 0.3)]
    assert all(kael.equal(a, b) for a, b in zip(compiled, eager))
    assert not kael.equal(eager[0], eager[1])


def test_dropout_draws_from_the_seeded_stream():
    kael.manual_seed(7)
    a = KF.dropout(kael.ones(64), 0.5)
    kael.manual_seed(7)
    assert kael.equal(KF.dropout(kael.ones(64), 0.5), a)


@pytest.mark.parametrize(
    "name", ["relu", "elu", "celu", "selu", "leaky_relu", "hardtanh", "threshold"]
)
def test_in_place_spellings_match_torch(name):
    args = (0.5, -1.0) if name == "threshold" else ()
    k, t = pair(VALUES, kael.float32)
    assert getattr(KF, f"{name}_")(k, *args) is k
    getattr(TF, f"{name}_")(t, *args)
    check(k, t)


def test_relu_and_silu_take_inplace_and_every_name_is_torchs():
    k, t = pair(VALUES, kael.float32)
    assert KF.relu(k, inplace=True) is k and KF.silu(k, True) is k
    check(k, TF.silu(TF.relu(t)))
    with pytest.raises(kael.TypeError, match="missing required argument 'threshold'"):
        KF.threshold(k)
    assert set(KF.__all__) <= set(dir(TF))


@pytest.mark.parametrize("n", [2, 16, 33, 127, 200], ids=str)
@pytest.mark.parametrize("first", [1, 7, 15], ids=str)
def test_dropout_never_draws_the_next_ops_counters(n, first):
    """dropout's draws start at its offset rounded up to a group of 16 blocks and touch
    whole groups' blocks: a rand after it, from an offset that is not a group's, must get
    counters dropout did not use (its first draw of block b is Philox word 0 of block b,
    so a shared block shows as rand's top bit repeating dropout's keep of that draw)."""
    kael.manual_seed(3)
    kael.rand(first, dtype=kael.float64)  # the offset, now `first`, is not a group's
    offset = kr.default_generator.position()[1]
    KF.dropout(kael.ones(n, dtype=kael.float64), 0.5)
    after = kr.default_generator.position()[1]
    base = (offset + 15) // 16 * 16
    touched = {(8 * base + i) >> 7 << 4 | (8 * base + i) & 15 for i in range(n)}
    assert max(touched) < after  # every block dropout drew lies inside its reservation
    assert min(touched) >= offset


def test_in_place_relu_and_silu_count_a_write_as_every_in_place_op():
    """x.relu_() and F.relu/F.silu(inplace=True) wrote without moving the storage's version
    (what a compiled plan's trace reads to see writes); torch's _version moves too."""
    for write in (
        lambda x: x.relu_(),
        lambda x: kael.relu_(x),
        lambda x: kael.nn.functional.relu(x, inplace=True),
        lambda x: kael.nn.functional.silu(x, inplace=True),
    ):
        x = kael.tensor([-1.0, 2.0])
        before = x._impl.storage.version
        write(x)
        assert x._impl.storage.version == before + 1
