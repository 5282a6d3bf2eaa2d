"""kael.autocast against torch.autocast on the CPU: the same output dtypes for every op in
the tables (and values within the lower precision's rounding), float64 never cast, the
state per thread and restored on exit, and compiled plans keyed by it."""

import threading
import warnings

import numpy as np
import pytest
import torch

import kael

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 4)).astype(np.float32)
IMG = RNG.standard_normal((1, 2, 5, 5)).astype(np.float32)
W = RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)
VOL = RNG.standard_normal((1, 2, 4, 4, 4)).astype(np.float32)
SPD = (X @ X.T + 4 * np.eye(4)).astype(np.float32)


def _t(lib, a, dtype):
    return lib.tensor(a).to(getattr(lib, dtype))


# Each call builds its inputs in dtype `d` with lib L (F: its functional namespace).
CALLS = {
    "matmul": lambda L, F, d: L.matmul(_t(L, X, d), _t(L, X, d)),
    "at_operator": lambda L, F, d: _t(L, X, d) @ _t(L, X, d),
    "mm_method": lambda L, F, d: _t(L, X, d).mm(_t(L, X, d)),
    "bmm": lambda L, F, d: L.bmm(_t(L, X, d)[None], _t(L, X, d)[None]),
    "addmm": lambda L, F, d: L.addmm(_t(L, X, d), _t(L, X, d), _t(L, X, d)),
    "baddbmm": lambda L, F, d: L.baddbmm(_t(L, X, d)[None], _t(L, X, d)[None], _t(L, X, d)[None]),
    "einsum": lambda L, F, d: L.einsum("ij,jk->ik", _t(L, X, d), _t(L, X, d)),
    "linear": lambda L, F, d: F.linear(_t(L, X, d), _t(L, X, d)),
    "conv2d": lambda L, F, d: F.conv2d(_t(L, IMG, d), _t(L, W, d)),
    "conv_transpose2d": lambda L, F, d: F.conv_transpose2d(_t(L, IMG, d), _t(L, W, d).transpose(0, 1)),
    "sdpa": lambda L, F, d: F.scaled_dot_product_attention(*[_t(L, X, d)[None]] * 3),
    "prelu": lambda L, F, d: F.prelu(_t(L, X, d), _t(L, np.ones(1, np.float32), d)),
    "mse_loss": lambda L, F, d: F.mse_loss(_t(L, X, d), _t(L, X.T, d)),
    "cross_entropy": lambda L, F, d: F.cross_entropy(_t(L, X, d), L.tensor([0, 1, 2, 3])),
    "l1_loss": lambda L, F, d: F.l1_loss(_t(L, X, d), _t(L, X.T, d)),
    "bce_with_logits": lambda L, F, d: F.binary_cross_entropy_with_logits(_t(L, X, d), _t(L, X, d).sigmoid()),
    "avg_pool3d": lambda L, F, d: F.avg_pool3d(_t(L, VOL, d), 2),
    "max_pool3d": lambda L, F, d: F.max_pool3d(_t(L, VOL, d), 2),
    "prod": lambda L, F, d: L.prod(_t(L, X, d)),
    "quantile": lambda L, F, d: L.quantile(_t(L, X, d), 0.5),
    "cdist": lambda L, F, d: L.cdist(_t(L, X, d), _t(L, X, d)),
    "trace": lambda L, F, d: L.trace(_t(L, X, d)),
    "inv": lambda L, F, d: L.linalg.inv(_t(L, SPD, d)),
    "cholesky": lambda L, F, d: L.linalg.cholesky(_t(L, SPD, d)),
    "untouched_add": lambda L, F, d: _t(L, X, d) + _t(L, X, d),
    "untouched_softmax": lambda L, F, d: L.softmax(_t(L, X, d), 0),
    "float64_never_cast": lambda L, F, d: L.matmul(_t(L, X, "float64"), _t(L, X, "float64")),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_ops_under_autocast_take_torchs_dtypes(name, dtype):
    with torch.autocast("cpu"):
        want = CALLS[name](torch, torch.nn.functional, dtype)
    with kael.autocast("cpu"):
        got = CALLS[name](kael, kael.nn.functional, dtype)
    assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), rtol=4e-2, atol=4e-2)


def test_modules_run_in_the_autocast_dtype():
    layer = kael.nn.Linear(4, 3)
    with kael.autocast("cpu"):
        assert layer(kael.tensor(X)).dtype is kael.bfloat16
        assert kael.nn.MSELoss()(kael.tensor(X).bfloat16(), kael.zeros(4, 4)).dtype is kael.float32
    assert layer(kael.tensor(X)).dtype is kael.float32


def test_state_is_restored_and_nested_blocks_stack():
    assert not kael.is_autocast_enabled("cpu")
    with kael.autocast("cpu", dtype=kael.float16):
        assert kael.get_autocast_dtype("cpu") is kael.float16
        with kael.autocast("cpu", enabled=False):
            assert not kael.is_autocast_enabled("cpu")
            assert (kael.ones(2, 2) @ kael.ones(2, 2)).dtype is kael.float32
        assert (kael.ones(2, 2) @ kael.ones(2, 2)).dtype is kael.float16
    with pytest.raises(RuntimeError), kael.autocast("cpu"):
        raise RuntimeError("inside")
    assert not kael.is_autocast_enabled("cpu") and kael.get_autocast_dtype("cpu") is kael.bfloat16


def test_decorator_form():
    @kael.autocast("cpu")
    def product(a):
        return a @ a

    assert product(kael.ones(2, 2)).dtype is kael.bfloat16
    assert (kael.ones(2, 2) @ kael.ones(2, 2)).dtype is kael.float32


def test_state_is_per_thread():
    seen = []
    with kael.autocast("cpu"):
        worker = threading.Thread(
            target=lambda: seen.append((kael.ones(2, 2) @ kael.ones(2, 2)).dtype)
        )
        worker.start()
        worker.join()
    assert seen == [kael.float32]


def test_an_unsupported_dtype_warns_and_disables_as_torch():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with kael.autocast("cpu", dtype=kael.float32):
            assert not kael.is_autocast_enabled("cpu")
    assert "target dtype is not supported. Disabling autocast" in str(caught[0].message)
    with pytest.raises(kael.ValueError, match="Expected `device_type` of type `str`"):
        kael.autocast(3)


def test_compiled_plans_are_keyed_by_the_autocast_state():
    @kael.compile
    def f(a):
        return a @ a.t()

    x = kael.tensor(X)
    assert f(x).dtype is kael.float32
    with kael.autocast("cpu"):
        assert f(x).dtype is kael.bfloat16 and f(x).dtype is kael.bfloat16
    with kael.autocast("cpu", dtype=kael.float16):
        assert f(x).dtype is kael.float16
    assert f(x).dtype is kael.float32 and f(x).dtype is kael.float32


def test_amp_names():
    assert kael.amp.autocast is kael.autocast
    assert kael.amp.is_autocast_available("cpu") and not kael.amp.is_autocast_available("xpu")


def test_out_forms_are_not_autocast_as_torch():
    """The wrapper cast `out` too: the caller's tensor was never written."""
    a, out = kael.ones(2, 2), kael.zeros(2, 2)
    with kael.autocast("cpu"):
        result = kael.matmul(a, a, out=out)
    assert result is out and out.tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_float32_ops_run_without_autocast_inside():
    """pinverse and lstsq multiply with @ inside: those products were lowered too."""
    s = kael.eye(3) * 2
    with kael.autocast("cpu"):
        for got in (kael.pinverse(s), kael.cholesky_inverse(s), kael.linalg.lstsq(s, s).solution):
            assert got.dtype is kael.float32


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("LSTM", lambda L: L.nn.LSTM(4, 5)(L.ones(3, 1, 4))[0]),
        ("RNN", lambda L: L.nn.RNN(4, 5)(L.ones(3, 1, 4))[0]),
        ("GRU", lambda L: L.nn.GRU(4, 5)(L.ones(3, 1, 4))[0]),
        ("RNNCell", lambda L: L.nn.RNNCell(4, 5)(L.ones(2, 4))),
        ("LSTMCell", lambda L: L.nn.LSTMCell(4, 5)(L.ones(2, 4))[0]),
        (
            "gru_cell",
            lambda L: L.gru_cell(L.ones(2, 4), L.ones(2, 5), L.ones(15, 4), L.ones(15, 5)),
        ),
        ("linalg_matmul", lambda L: L.linalg.matmul(L.ones(2, 2), L.ones(2, 2))),
    ],
)
def test_recurrent_layers_take_torchs_policy(name, make):
    with torch.autocast("cpu"):
        want = make(torch)
    with kael.autocast("cpu:0"):
        got = make(kael)
    assert str(got.dtype) == str(want.dtype).removeprefix("torch.")


def test_a_recompile_for_autocast_says_so():
    @kael.compile
    def f(a):
        return a @ a

    x = kael.ones(2, 2)
    f(x)
    with kael.autocast("cpu"):
        f(x)
    assert f.cache_info().recompiles == ["the autocast changed (now (('cpu', kael.bfloat16),))"]


# ---- CUDA's own table (ATen/autocast_mode.h's lists), on cuda tensors --------------------------

F = kael.nn.functional
SMALL = X[:2, :3]


def _cuda(a, dtype):
    return kael.tensor(a).to(getattr(kael, dtype)).to("cuda")


CUDA_CALLS = {  # name -> (call on cuda tensors of dtype d, the dtype torch's CUDA table gives)
    "exp": (lambda d: kael.exp(_cuda(SMALL, d)), "float32"),
    "log_method": (lambda d: _cuda(SMALL, d).abs().log(), "float32"),
    "pow_operator": (lambda d: _cuda(SMALL, d) ** 2, "float32"),
    "sum": (lambda d: _cuda(SMALL, d).sum(), "float32"),
    "softmax": (lambda d: F.softmax(_cuda(SMALL, d), -1), "float32"),
    "layer_norm": (lambda d: F.layer_norm(_cuda(SMALL, d), (3,)), "float32"),
    "mse_loss": (lambda d: F.mse_loss(_cuda(SMALL, d), _cuda(SMALL, d)), "float32"),
    "vector_norm": (lambda d: kael.linalg.vector_norm(_cuda(SMALL, d)), "float32"),
    "interpolate": (lambda d: F.interpolate(_cuda(IMG[..., :2, :2], d), scale_factor=2), "float32"),
    "matmul": (lambda d: _cuda(SMALL, d) @ _cuda(SMALL.T, d), "float16"),
    "linear": (lambda d: F.linear(_cuda(SMALL, d), _cuda(SMALL, d)), "float16"),
    "mv": (lambda d: kael.mv(_cuda(SMALL, d), _cuda(SMALL[0], d)), "float16"),
    "relu (not listed)": (lambda d: kael.relu(_cuda(SMALL, d)), None),
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CUDA_CALLS))
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_cuda_tensors_take_the_cuda_table(name, dtype):
    call, want = CUDA_CALLS[name]
    with kael.autocast("cuda"):
        got = call(dtype)
    assert str(got.dtype) == (want or dtype) and got.device.type == "cuda"


@pytest.mark.gpu
def test_each_device_type_keeps_its_own_table_and_switch():
    half_host = kael.tensor(SMALL).half()
    with kael.autocast("cuda"):  # CPU tensors: autocast is off for them
        assert kael.exp(half_host).dtype is kael.float16
        assert (kael.tensor(SMALL) @ kael.tensor(SMALL.T)).dtype is kael.float32
    with kael.autocast("cpu"):  # CPU's table: exp is not in it; cuda tensors untouched
        assert kael.exp(half_host).dtype is kael.float16
        assert kael.exp(_cuda(SMALL, "float16")).dtype is kael.float16
        assert (_cuda(SMALL, "float32") @ _cuda(SMALL.T, "float32")).dtype is kael.float32


def test_every_cuda_table_name_is_a_published_op():
    from kael.frontend import autocast

    places = {
        "kael": kael, "functional": F, "linalg": kael.linalg, "Tensor": kael.Tensor,
        "special": kael.special, "fft": kael.fft,
        "recurrent": __import__("kael.frontend.recurrent", fromlist=["FUNCTIONS"]).FUNCTIONS,
    }  # fmt: skip
    for table, names in autocast.CUDA_TABLES.items():
        where = places[table]
        missing = [
            n for n in names if not (n in where if isinstance(where, dict) else hasattr(where, n))
        ]
        assert not missing, (table, missing)


def test_aliases_stay_one_object_when_autocast_cuda_wraps_them():
    # the CUDA-only wrappers are installed at the first autocast("cuda"): kael.special's
    # aliases are wrapped with kael's, each the same object as before
    from kael.frontend import autocast

    autocast.set_autocast_enabled("cuda", True)
    autocast.set_autocast_enabled("cuda", False)
    for name in ("erfinv", "expm1", "log1p", "log_softmax", "logsumexp", "softmax"):
        assert getattr(kael.special, name) is getattr(kael, name), name
    assert kael.arccos is kael.acos and kael.arcsin is kael.asin  # aliases in one namespace
    assert F.layer_norm is kael.layer_norm and F.rms_norm is kael.rms_norm


def test_per_device_autocast_functions_are_torchs_names_over_the_device_type_state():
    names = {n for n in dir(torch) if n.endswith(("_cpu_dtype", "_gpu_dtype", "_cpu_enabled"))}
    assert names == {
        n for n in dir(kael) if n.endswith(("_cpu_dtype", "_gpu_dtype", "_cpu_enabled"))
    }
    assert kael.is_autocast_cpu_enabled() is torch.is_autocast_cpu_enabled() is False
    for device, kind in (("cpu", "cpu"), ("gpu", "cuda")):
        got = getattr(kael, f"get_autocast_{device}_dtype")()
        assert str(got) == str(getattr(torch, f"get_autocast_{device}_dtype")()).removeprefix(
            "torch."
        )
        try:
            getattr(kael, f"set_autocast_{device}_dtype")(
                kael.bfloat16 if got is kael.float16 else kael.float16
            )
            assert kael.get_autocast_dtype(kind) is not got
        finally:
            kael.set_autocast_dtype(kind, got)
    with kael.autocast("cpu"):
        assert kael.is_autocast_cpu_enabled() is True
    try:
        kael.set_autocast_cpu_enabled(True)
        assert kael.is_autocast_enabled("cpu") is True
    finally:
        kael.set_autocast_cpu_enabled(False)
    assert kael.is_autocast_enabled("cpu") is False
