"""A compiled plan's matrix products and their epilogues (frontend/plan_matmul.py): the
elementwise kernel after a product runs inside it, block by block, with eager's bits."""

from __future__ import annotations

import pytest

import kael
from kael.frontend import tracing
from kael.frontend.plan_matmul import MatmulCall

F = kael.nn.functional


def _bits(a: kael.Tensor, b: kael.Tensor) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.numpy().tobytes() == b.numpy().tobytes()


def _products(compiled, *args) -> list[MatmulCall]:
    return [s for s in compiled.plan_for(*args).steps if type(s) is MatmulCall]


def _inside(compiled, *args) -> list[bool]:
    """Per product of the plan: whether its epilogue runs inside it for these arguments."""
    plan = compiled.plan_for(*args)
    return [
        s.epilogue is not None and s.ready(plan.slots)[2] is not None
        for s in _products(compiled, *args)
    ]


def _agree(fn, *args, calls: int = 2):
    compiled = kael.compile(fn)
    want = fn(*args)
    for _ in range(calls):
        got = compiled(*args)
        for g, w in zip(
            got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]
        ):
            _bits(g, w)
    kael.compile(fn, check=True)(*args)  # each fused kernel against its ops, bit for bit
    return compiled


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    saved = kael.get_num_threads()
    kael.set_num_threads(request.param)
    yield request.param
    kael.set_num_threads(saved)


def test_bias_and_activation_run_inside_each_product():
    x = kael.randn(300, 200)
    params = [kael.randn(200, 500), kael.randn(500), kael.randn(500, 70), kael.randn(70)]

    def mlp(x, w1, b1, w2, b2):
        return F.gelu(F.relu(x @ w1 + b1) @ w2 + b2)

    c = _agree(mlp, x, *params)
    assert len(c.kernels(x, *params)) == 2  # two products, each with its epilogue
    assert _inside(c, x, *params) == [True, True]
    assert [s.covers for s in _products(c, x, *params)] == [
        ["matmul", "add", "relu"],
        ["matmul", "add", "gelu"],
    ]


@pytest.mark.parametrize(
    "m,k,n",
    [
        (7, 5, 3),  # one edge tile
        (6, 100, 2000),  # at most mr rows: B read in place, columns split over threads
        (50, 600, 90),  # k over kc: the epilogue follows the last k block only
        (40, 30, 1100),  # n over nc: one epilogue block per column panel
        (500, 64, 130),  # row blocks over both threads
    ],
)
def test_epilogue_bits_match_eager_for_every_blocking(m, k, n, threads):
    x, w, b = kael.randn(m, k), kael.randn(k, n), kael.randn(n)

    def f(x, w, b, s):
        return kael.tanh((x @ w) * s + b)

    c = _agree(f, x, w, b, 0.25)
    assert _inside(c, x, w, b, 0.25) == [True]
    _bits(c(x, w, b, 0.5), f(x, w, b, 0.5))  # the scale is a run-time parameter


@pytest.mark.parametrize("m,k,n", [(7, 5, 3), (64, 64, 32), (50, 600, 90)])
def test_a_small_fused_product_replays_as_native_calls_with_its_epilogue_words(
    m, k, n, monkeypatch
):
    """A product whose launches all run on the calling thread replays as native calls, each
    macro launch handed its epilogue's two words (gemm_run.Plan.epi_chain): no launcher
    Python, and eager's bits."""
    from kael.codegen.cpu import gemm_run

    x, w, b = kael.randn(m, k), kael.randn(k, n), kael.randn(n)

    def f(x, w, b):
        return F.relu(x @ w.T.contiguous().T + b)

    c = _agree(f, x, w, b)
    assert _inside(c, x, w, b) == [True]

    def refused(*args, **kwargs):
        raise AssertionError("the launcher ran a step of a fused product")

    monkeypatch.setattr(gemm_run, "launch", refused)
    for _ in range(2):
        x, w, b = kael.randn(m, k), kael.randn(k, n), kael.randn(n)
        _bits(c(x, w, b), f(x, w, b))


def test_a_fused_product_is_written_into_the_replay_unless_its_output_may_be_an_operand(
    monkeypatch,
):
    """The replay launches a fused product itself where the epilogue's output cannot share
    memory with an operand (fresh memory of the call's own); an epilogue writing into an
    argument runs through MatmulCall.run, which checks the storages per call."""
    from kael.frontend.plan_matmul import MatmulCall

    x, w, b = kael.randn(16, 32), kael.randn(32, 8), kael.randn(8)
    c = _agree(lambda x, w, b: F.relu(x @ w + b), x, w, b)
    ran, original = [], MatmulCall.run
    monkeypatch.setattr(MatmulCall, "run", lambda self, call: ran.append(1) or original(self, call))
    _bits(c(x, w, b), F.relu(x @ w + b))
    assert ran == []

    def into(x, w, o):
        o.copy_(F.relu(x @ w))
        return o

    got, want = kael.empty(16, 8), kael.empty(16, 8)
    compiled = kael.compile(into)
    for _ in range(3):
        compiled(x, w, got)
    into(x, w, want)
    _bits(got, want)
    assert _inside(compiled, x, w, got) == [True] and ran


def _over_a_layer_norm(a, w):  # the left operand is an extern's result
    return (kael.layer_norm(a, (32,)) @ w).relu()


def _share(x):  # an extern over host memory: a new storage over x's own memory
    return kael.from_numpy(x.numpy())


def _into_what_an_extern_shares(a, w):  # the epilogue writes h; the right operand is h
    h = a * 2
    h.add_(tracing.op_door("share", _share)(h) @ w)
    return h


@pytest.mark.parametrize(
    "f, delegated", [(_over_a_layer_norm, False), (_into_what_an_extern_shares, True)]
)
def test_a_fused_product_beside_an_extern_is_written_out_unless_its_output_met_one(
    f, delegated, monkeypatch
):
    """An extern may return a new storage over memory it was given: a product reading an
    extern's result is written into the replay only where its epilogue writes fresh
    memory no earlier extern was given; else MatmulCall.run checks the storages."""
    from kael.frontend.plan_matmul import MatmulCall

    a, w = kael.randn(32, 32), kael.randn(32, 32)
    c = _agree(f, a, w)
    assert _inside(c, a, w) == [True]
    ran, original = [], MatmulCall.run
    monkeypatch.setattr(MatmulCall, "run", lambda self, call: ran.append(1) or original(self, call))
    got, want = c(a, w), f(a, w)
    for g, e in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, want)), strict=True):
        _bits(g, e)
    assert bool(ran) is delegated


@pytest.mark.parametrize("m,k,n", [(1, 64, 100), (64, 8, 1)], ids=["row", "column"])
def test_matrix_vector_products_run_the_epilogue_after(m, k, n):
    x, w = kael.randn(m, k), kael.randn(k, n)
    c = _agree(lambda x, w: (x @ w).sigmoid(), x, w)
    assert _inside(c, x, w) == [False]  # gemv kernels have no blocks to follow


def test_batched_products_take_an_epilogue():
    q, kt = kael.randn(3, 40, 30), kael.randn(3, 30, 20)
    x, w = kael.randn(2, 50, 30), kael.randn(30, 20)
    bias = kael.randn(20)
    c = _agree(lambda q, k, b: (q @ k) * 0.5 + b, q, kt, bias)
    assert _inside(c, q, kt, bias) == [True]  # C's batches are one run of rows
    c = _agree(lambda x, w, b: F.relu(x @ w + b), x, w, bias)
    assert _inside(c, x, w, bias) == [True]  # a shared weight folds the batch into rows
    # attention's scores: a size-1 batch dim (whose stride views may spell differently)
    q, kt, mask = kael.randn(1, 4, 20, 16), kael.randn(1, 4, 16, 20), kael.randn(20, 20)
    c = _agree(lambda q, k, m: (q @ k) * 0.25 + m, q, kt, mask)
    assert _inside(c, q, kt, mask) == [True]


def test_residual_may_read_the_left_operand():
    x, w = kael.randn(64, 64), kael.randn(64, 64)
    c = _agree(lambda x, w: x @ w + x, x, w)
    assert _inside(c, x, w) == [True]


def test_reading_the_product_elsewhere_keeps_it_apart():
    x, w = kael.randn(32, 32), kael.randn(32, 32)
    c = _agree(lambda x, w: (lambda y: y + y.T)(x @ w), x, w)
    assert [s.epilogue for s in _products(c, x, w)] == [None]


def test_product_returned_beside_its_epilogue():
    x, w = kael.randn(32, 48), kael.randn(48, 16)
    c = _agree(lambda x, w: (lambda y: (y, y * 2 + 1))(x @ w), x, w)
    assert _inside(c, x, w) == [True]  # c is stored anyway: the epilogue reads it in cache


@pytest.mark.parametrize("target", ["left", "right"])
def test_epilogue_never_writes_an_operand_of_its_product(target):
    def f(x, w):
        (x if target == "left" else w).add_(x @ w)
        return x, w

    x, w = kael.randn(16, 16), kael.randn(16, 16)
    ex, ew = x.clone(), w.clone()
    f(ex, ew)
    c = kael.compile(f)
    cx, cw = x.clone(), w.clone()
    c(cx, cw)
    _bits(cx, ex)
    _bits(cw, ew)
    assert [s.epilogue for s in _products(c, x.clone(), w.clone())] == [None]


@pytest.mark.parametrize("m,k,n,t", [(4, 64, 256, 2), (300, 600, 1100, 1)])
def test_position_kernels_run_after_the_product(m, k, n, t):
    # triu counts columns: run over a column slice, it would count from the slice's start
    saved = kael.get_num_threads()
    kael.set_num_threads(t)
    try:
        x, w = kael.randn(m, k), kael.randn(k, n)
        c = _agree(lambda x, w: (x @ w).triu(1), x, w)
        assert [s.epilogue for s in _products(c, x, w)] == [None]
    finally:
        kael.set_num_threads(saved)


def test_epilogue_apart_when_its_output_overlaps_an_operand():
    # Two storages over one array: the output's rows are rows A's later blocks still read.
    # Such arguments make the call run eagerly (compiled._twins), which must give eager's
    # bits; the plan's own check (MatmulCall._overlaps) stays for twins an extern returns.
    import warnings

    import numpy as np

    arr = np.random.default_rng(0).standard_normal((600, 64)).astype(np.float32)
    w = kael.randn(64, 64)

    def f(x, w, out):
        out.copy_(F.relu(x @ w))
        return out

    want = f(kael.tensor(arr[:500]), w, kael.tensor(arr[100:600]))
    got = kael.compile(f)
    for call in range(2):
        a = arr.copy()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = got(kael.from_numpy(a[:500]), w, kael.from_numpy(a[100:600]))
        warned = any("share memory" in str(c.message) for c in caught)
        assert warned == (call == 0)  # once per function
        _bits(result, want)


def test_integer_products_run_the_epilogue_after():
    a = kael.randint(-5, 5, (20, 30))
    b = kael.randint(-5, 5, (30, 10))
    c = _agree(lambda a, b: (a @ b) + 1, a, b)
    assert [s.epilogue for s in _products(c, a, b)] == [None]


def test_out_argument_product_then_epilogue():
    x, w, o = kael.randn(20, 30), kael.randn(30, 10), kael.empty(20, 10)

    def f(x, w, o):
        kael.matmul(x, w, out=o)
        return o * 3

    ex, eo = f(x, w, o.clone()), None
    co = o.clone()
    got = kael.compile(f)(x, w, co)
    _bits(got, ex)
    eo = o.clone()
    f(x, w, eo)
    _bits(co, eo)


def test_inspect_shows_the_product_and_where_its_epilogue_runs():
    x, w, b = kael.randn(30, 20), kael.randn(20, 10), kael.randn(10)
    text = str(
        kael.compile(lambda x, w, b: F.relu(x @ w + b)).inspect(x, w, b, stages=("kael", "llvm"))
    )
    assert "matmul [30, 20] @ [20, 10]: hand-written float32 kernels" in text
    assert "epilogue, run on each block as it completes: kernel add_relu" in text
    assert 'define void @"kael_gemm_macro"' in text
