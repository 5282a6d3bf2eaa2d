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
