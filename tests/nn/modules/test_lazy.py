"""Lazy modules against torch's: the repr before and after the first forward, the class
they become, parameter shapes, outputs with torch's weights, load_state_dict before any
forward (the checkpoint's shapes materialize the parameters), and a dtype or device change
before it (the uninitialized buffers stay so, then materialize with it)."""

import numpy as np
import pytest
import torch

import kael
from kael.nn.parameter import UninitializedBuffer, UninitializedParameter

LAZY = [
    ("LazyLinear", (5,), (4, 7)),
    ("LazyConv1d", (4, 3), (2, 3, 9)),
    ("LazyConv2d", (4, 3), (2, 3, 6, 6)),
    ("LazyConv2d", (4, 3), (3, 6, 6)),  # unbatched
    ("LazyConv3d", (2, 2), (1, 3, 4, 4, 4)),
    ("LazyConvTranspose1d", (4, 3, 2), (2, 3, 5)),
    ("LazyConvTranspose2d", (4, 3, 2, 1, 1), (2, 3, 6, 6)),
    ("LazyConvTranspose3d", (2, 2), (1, 3, 3, 3, 3)),
    ("LazyBatchNorm1d", (), (4, 3)),
    ("LazyBatchNorm2d", (1e-3, 0.2), (2, 3, 6, 6)),
    ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", (), (2, 3, 5)),
    ("LazyInstanceNorm2d", (), (2, 3, 6, 6)),
    ("LazyInstanceNorm3d", (), (2, 3, 2, 2, 2)),
]


def _input(shape):
    return np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize(("name", "args", "shape"), LAZY, ids=lambda v: str(v))
def test_first_forward_sizes_and_becomes_the_ordinary_class(name, args, shape):
    ours, theirs = getattr(kael.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs) and ours.has_uninitialized_params()
    x = _input(shape)
    want = theirs(torch.tensor(x))
    got = ours(kael.tensor(x))  # sizes the parameters (values: kael's own init)
    assert type(ours).__name__ == type(theirs).__name__ and repr(ours) == repr(theirs)
    assert not any(isinstance(t, UninitializedParameter) for t in ours.parameters())
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in theirs.state_dict().items()
    ]
    ours.load_state_dict(theirs.state_dict())
    if "BatchNorm" in name:  # the first forward trained the statistics: compare in eval
        ours.eval(), theirs.eval()
        want = theirs(torch.tensor(x))
    got = ours(kael.tensor(x))
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_load_state_dict_before_any_forward_takes_the_checkpoints_shapes():
    theirs = torch.nn.Linear(7, 5)
    ours = kael.nn.LazyLinear(5)
    ours.load_state_dict(theirs.state_dict())
    assert ours.weight.shape == (5, 7) and not ours.has_uninitialized_params()
    x = _input((3, 7))
    got = ours(kael.tensor(x))
    assert type(ours) is kael.nn.Linear and ours.in_features == 7
    np.testing.assert_allclose(
        got.numpy(), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6
    )


def test_placeholders_keep_dtype_and_become_their_classes():
    p = UninitializedParameter(dtype=kael.float64)
    assert repr(p) == "<UninitializedParameter>" and p.requires_grad
    p.materialize((2, 3))
    assert type(p) is kael.nn.Parameter and p.shape == (2, 3) and p.dtype is kael.float64
    b = UninitializedBuffer()
    b.materialize(4)
    assert type(b) is kael.Tensor and b.shape == (4,)


def test_lazy_layers_inside_a_model_and_bias_false():
    model = kael.nn.Sequential(kael.nn.LazyConv2d(4, 3, bias=False), kael.nn.ReLU(),
                               kael.nn.Flatten(), kael.nn.LazyLinear(2))  # fmt: skip
    out = model(kael.tensor(_input((2, 3, 5, 5))))
    assert out.shape == (2, 2) and model[0].bias is None and model[3].in_features == 36


def test_conv_input_of_the_wrong_rank_is_refused_as_torch():
    with pytest.raises(RuntimeError, match="Expected 3D"):
        torch.nn.LazyConv2d(4, 3)(torch.zeros(3, 3))
    with pytest.raises(kael.ValueError, match=r"Expected 3D \(unbatched\) or 4D \(batched\)"):
        kael.nn.LazyConv2d(4, 3)(kael.zeros(3, 3))


def test_groups_must_divide_the_channels_found():
    with pytest.raises(kael.ValueError, match="in_channels must be divisible by groups"):
        kael.nn.LazyConv2d(4, 3, groups=2)(kael.zeros(1, 3, 5, 5))


NORMS = [
    ("LazyBatchNorm1d", {}, (4, 3)),
    ("LazyBatchNorm2d", {}, (2, 3, 2, 2)),
    ("LazyInstanceNorm1d", {"track_running_stats": True}, (2, 3, 5)),
]
# name -> (how a module is converted, the dtype it then has)
CONVERSIONS = {
    "double": (lambda m, lib: m.double(), "float64"),
    "half": (lambda m, lib: m.half(), "float16"),
    "to float64": (lambda m, lib: m.to(lib.float64), "float64"),
}
TOLERANCES = {"float64": {"rtol": 1e-7, "atol": 1e-9}, "float16": {"rtol": 2e-3, "atol": 2e-3}}


def _same_state(ours, theirs, **tolerance) -> None:
    """Both modules' state dicts alike: names, dtypes, shapes and values."""
    mine, want = ours.state_dict(), theirs.state_dict()
    assert list(mine) == list(want)
    for key, t in want.items():
        assert mine[key].dtype.name == str(t.dtype).removeprefix("torch."), key
        assert mine[key].device.type == t.device.type and mine[key].shape == tuple(t.shape), key
        got = mine[key].cpu().to(kael.float64).numpy()
        np.testing.assert_allclose(got, t.double().numpy(), **tolerance, err_msg=key)


@pytest.mark.parametrize(("name", "kwargs", "shape"), NORMS, ids=lambda v: str(v))
@pytest.mark.parametrize("conversion", list(CONVERSIONS))
def test_a_norm_converted_before_its_first_forward_materializes_in_the_new_dtype(
    name, kwargs, shape, conversion
):
    convert, dtype = CONVERSIONS[conversion]
    ours = convert(getattr(kael.nn, name)(**kwargs), kael)
    theirs = convert(getattr(torch.nn, name)(**kwargs), torch)
    for stat in ("running_mean", "running_var"):
        assert type(getattr(theirs, stat)).__name__ == "UninitializedBuffer"
        assert type(getattr(ours, stat)) is UninitializedBuffer
        assert getattr(ours, stat).dtype is getattr(kael, dtype)
    x = _input(shape).astype(dtype)
    got, want = ours(kael.tensor(x)), theirs(torch.tensor(x)).detach()
    assert got.dtype is getattr(kael, dtype) and got.shape == tuple(want.shape)
    np.testing.assert_allclose(
        got.to(kael.float64).numpy(), want.double().numpy(), **TOLERANCES[dtype]
    )
    assert type(ours).__name__ == type(theirs).__name__ and type(ours.running_mean) is kael.Tensor
    _same_state(ours, theirs, **TOLERANCES[dtype])


def test_bfloat16_before_the_first_forward_materializes_in_bfloat16_where_torch_refuses():
    with pytest.raises(ValueError, match="uninitialized parameter"):
        torch.nn.LazyBatchNorm1d().bfloat16()
    ours = kael.nn.LazyBatchNorm1d().bfloat16()
    x = kael.tensor(_input((4, 3))).bfloat16()
    got = ours(x)
    want = torch.nn.BatchNorm1d(3)(torch.tensor(x.float().numpy())).detach()
    assert got.dtype is kael.bfloat16 and ours.running_var.dtype is kael.bfloat16
    np.testing.assert_allclose(got.float().numpy(), want.numpy(), rtol=2e-2, atol=2e-2)


MOVES = {"to('cuda')": lambda m: m.to("cuda"), "cuda()": lambda m: m.cuda()}


@pytest.mark.gpu
@pytest.mark.parametrize("move", list(MOVES))
def test_a_norm_moved_before_its_first_forward_materializes_on_the_device(move):
    ours = MOVES[move](kael.nn.LazyBatchNorm1d())
    theirs = torch.nn.LazyBatchNorm1d()
    assert (
        type(ours.running_mean) is UninitializedBuffer and ours.running_mean.device.type == "cuda"
    )
    x = _input((4, 3))
    got, want = ours(kael.tensor(x).cuda()), theirs(torch.tensor(x)).detach()
    assert got.device.type == "cuda" and type(ours) is kael.nn.BatchNorm1d
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    for key, t in ours.state_dict().items():
        assert t.device.type == "cuda", key
    ours.cpu()
    _same_state(ours, theirs, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_threads_calling_a_new_lazy_module_at_once_initialize_it_once(compiled):
    """Two threads' first forwards: one sizes the parameters, the other waits and uses
    them (it used to find the hook gone, or, compiled, read parameters made inside the
    other thread's unfinished trace: "trace did not finish")."""
    import threading
    import warnings

    for _ in range(5):
        module = kael.nn.LazyLinear(5)
        call = kael.compile(module) if compiled else module
        x = kael.randn(3, 4)
        barrier, results, errors = threading.Barrier(2), [], []

        def run(call=call, x=x, barrier=barrier, results=results, errors=errors):
            barrier.wait()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the compiled retrace's notice
                    results.extend(call(x) for _ in range(3))
            except Exception as error:  # noqa: BLE001 - reported below
                errors.append(error)

        threads = [threading.Thread(target=run) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and type(module) is kael.nn.Linear
        want = module(x).numpy()
        assert len(results) == 6 and all(np.array_equal(r.numpy(), want) for r in results)
