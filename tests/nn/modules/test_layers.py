"""Every kael.nn layer against torch.nn's: built with the same arguments, loaded with torch's
state_dict, it has torch's repr, state keys and shapes, and gives torch's output (values,
dtype, shape) in eval mode, and in training mode where that is deterministic."""

import numpy as np
import pytest
import torch
from parity_helpers import same

import kael

# (layer, constructor args, constructor kwargs, input shapes); inputs are seeded normals,
# index inputs are named by a dtype instead of a shape.
LONG = torch.int64
CASES = [
    ("Linear", (4, 3), {}, [(2, 4)]),
    ("Linear", (4, 3), {"bias": False}, [(5, 2, 4)]),
    ("Linear", (0, 3), {}, [(2, 0)]),
    ("Bilinear", (3, 4, 2), {}, [(5, 3), (5, 4)]),
    ("Conv1d", (4, 6, 3), {"padding": "same", "padding_mode": "reflect"}, [(2, 4, 9)]),
    ("Conv1d", (4, 6, 3), {}, [(4, 9)]),
    ("Conv2d", (4, 6, 3), {"stride": 2, "padding": 1, "groups": 2}, [(2, 4, 9, 9)]),
    (
        "Conv2d",
        (4, 6, (3, 2)),
        {"padding": "same", "dilation": 2, "padding_mode": "circular", "bias": False},
        [(2, 4, 9, 9)],
    ),
    ("Conv2d", (3, 4, 2), {"padding": "valid", "padding_mode": "replicate"}, [(1, 3, 5, 5)]),
    ("Conv3d", (2, 2, 2), {"padding": 1}, [(1, 2, 4, 4, 4)]),
    ("ConvTranspose1d", (4, 6, 3), {"stride": 3, "groups": 2, "dilation": 2}, [(2, 4, 5)]),
    (
        "ConvTranspose2d",
        (4, 6, 3),
        {"stride": 2, "padding": 1, "output_padding": 1},
        [(2, 4, 5, 5)],
    ),
    ("ConvTranspose3d", (2, 3, 2), {"bias": False}, [(1, 2, 3, 3, 3)]),
    ("BatchNorm1d", (4,), {}, [(3, 4)]),
    ("BatchNorm1d", (4,), {"momentum": None}, [(3, 4, 2)]),
    ("BatchNorm2d", (4,), {"affine": False}, [(2, 4, 3, 3)]),
    ("BatchNorm2d", (4,), {"track_running_stats": False}, [(2, 4, 3, 3)]),
    ("BatchNorm3d", (2,), {"bias": False}, [(2, 2, 2, 2, 2)]),
    ("InstanceNorm1d", (4,), {}, [(4, 5)]),
    ("InstanceNorm2d", (4,), {"affine": True, "track_running_stats": True}, [(2, 4, 3, 3)]),
    ("InstanceNorm3d", (2,), {}, [(1, 2, 2, 3, 3)]),
    ("LayerNorm", ((3, 3),), {"bias": False}, [(2, 4, 3, 3)]),
    ("LayerNorm", (5,), {"elementwise_affine": False}, [(2, 5)]),
    ("GroupNorm", (2, 4), {}, [(2, 4, 3, 3)]),
    ("RMSNorm", (3,), {}, [(2, 3)]),
    ("RMSNorm", ([2, 3],), {"eps": 1e-3, "elementwise_affine": False}, [(4, 2, 3)]),
    ("LocalResponseNorm", (3,), {}, [(2, 5, 4)]),
    ("Embedding", (10, 3), {"padding_idx": -2}, [LONG]),
    ("Embedding", (10, 3), {"max_norm": 1.0}, [LONG]),
    ("EmbeddingBag", (10, 3), {"mode": "sum"}, [LONG]),
    ("EmbeddingBag", (10, 3), {"mode": "max", "padding_idx": 0}, [LONG]),
    ("PReLU", (), {}, [(2, 3)]),
    ("PReLU", (3,), {"init": 0.1}, [(2, 3, 4)]),
    ("ReLU", (), {}, [(2, 3)]),
    ("ReLU6", (), {"inplace": True}, [(2, 3)]),
    ("LeakyReLU", (0.2,), {}, [(2, 3)]),
    ("ELU", (), {"alpha": 0.5}, [(2, 3)]),
    ("CELU", (2.0,), {}, [(2, 3)]),
    ("SELU", (), {}, [(2, 3)]),
    ("GELU", (), {"approximate": "tanh"}, [(2, 3)]),
    ("SiLU", (), {}, [(2, 3)]),
    ("Mish", (), {}, [(2, 3)]),
    ("Hardtanh", (-2.0, 2.0), {}, [(2, 3)]),
    ("Hardsigmoid", (), {}, [(2, 3)]),
    ("Hardswish", (), {}, [(2, 3)]),
    ("Softplus", (2.0, 10.0), {}, [(2, 3)]),
    ("Softshrink", (0.3,), {}, [(2, 3)]),
    ("Hardshrink", (), {}, [(2, 3)]),
    ("Threshold", (0.1, 20.0), {}, [(2, 3)]),
    ("GLU", (), {}, [(2, 4)]),
    ("Softmax", (1,), {}, [(2, 3)]),
    ("Softmin", (), {"dim": 0}, [(2, 3)]),
    ("LogSoftmax", (-1,), {}, [(2, 3)]),
    ("Softmax2d", (), {}, [(2, 3, 2, 2)]),
    ("Softsign", (), {}, [(2, 3)]),
    ("Tanhshrink", (), {}, [(2, 3)]),
    ("LogSigmoid", (), {}, [(2, 3)]),
    ("Sigmoid", (), {}, [(2, 3)]),
    ("Tanh", (), {}, [(2, 3)]),
    ("RReLU", (), {}, [(2, 3)]),
    ("MaxPool1d", (2, 1), {}, [(2, 3, 6)]),
    ("MaxPool2d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, [(1, 2, 7, 7)]),
    ("MaxPool2d", (2,), {"return_indices": True}, [(1, 2, 4, 4)]),
    ("MaxPool3d", (2,), {"dilation": 2}, [(1, 1, 5, 5, 5)]),
    ("AvgPool1d", (3,), {"count_include_pad": False, "padding": 1}, [(2, 3, 7)]),
    ("AvgPool2d", (3, 2, 1), {"divisor_override": 4}, [(1, 2, 6, 6)]),
    ("AvgPool3d", (2,), {}, [(1, 1, 4, 4, 4)]),
    ("LPPool1d", (2, 3), {}, [(1, 2, 7)]),
    ("LPPool2d", (1.5, 2), {"ceil_mode": True}, [(1, 2, 5, 5)]),
    ("AdaptiveAvgPool1d", (4,), {}, [(2, 3, 9)]),
    ("AdaptiveAvgPool2d", ((3, None),), {}, [(1, 2, 7, 5)]),
    ("AdaptiveAvgPool3d", (2,), {}, [(1, 1, 3, 4, 5)]),
    ("AdaptiveMaxPool1d", (4,), {"return_indices": True}, [(2, 3, 9)]),
    ("AdaptiveMaxPool2d", (3,), {}, [(1, 2, 7, 5)]),
    ("AdaptiveMaxPool3d", (2,), {}, [(1, 1, 3, 4, 5)]),
    ("ZeroPad1d", (2,), {}, [(1, 2, 3)]),
    ("ZeroPad2d", ((1, 0, 2, 1),), {}, [(1, 2, 3, 3)]),
    ("ConstantPad1d", ((1, 2), 3.5), {}, [(1, 2, 3)]),
    ("ConstantPad3d", (1, -1.0), {}, [(1, 1, 2, 2, 2)]),
    ("ReflectionPad1d", (2,), {}, [(1, 2, 4)]),
    ("ReflectionPad2d", (1,), {}, [(1, 2, 3, 3)]),
    ("ReplicationPad2d", ((2, 0, 1, 3),), {}, [(1, 2, 3, 3)]),
    ("ReplicationPad3d", (1,), {}, [(1, 1, 2, 2, 2)]),
    ("CircularPad1d", (1,), {}, [(1, 2, 4)]),
    ("CircularPad2d", (1,), {}, [(1, 2, 3, 3)]),
    ("Flatten", (), {}, [(2, 3, 4)]),
    ("Flatten", (0, 1), {}, [(2, 3, 4)]),
    ("Unflatten", (1, (2, 3)), {}, [(2, 6)]),
    ("Identity", (3,), {"unused": 1}, [(2, 3)]),
    ("PixelShuffle", (2,), {}, [(1, 8, 2, 3)]),
    ("PixelUnshuffle", (2,), {}, [(1, 2, 4, 6)]),
    ("ChannelShuffle", (2,), {}, [(1, 4, 2, 2)]),
    ("Upsample", (), {"scale_factor": 2}, [(1, 2, 3, 3)]),
    ("Upsample", ((5, 4),), {"mode": "bilinear", "align_corners": True}, [(1, 2, 3, 3)]),
    ("Upsample", (), {"scale_factor": (1.5, 2), "mode": "bicubic"}, [(1, 1, 4, 4)]),
    ("UpsamplingNearest2d", (), {"scale_factor": 2}, [(1, 2, 3, 3)]),
    ("UpsamplingBilinear2d", ((4, 5),), {}, [(1, 2, 3, 3)]),
    ("Fold", ((4, 5), 2), {}, [(1, 12, 12)]),
    ("Unfold", (2,), {"stride": 2, "padding": 1}, [(1, 3, 4, 4)]),
    ("CosineSimilarity", (), {"dim": 0}, [(3, 4), (3, 4)]),
    ("PairwiseDistance", (1.0,), {"keepdim": True}, [(3, 4), (3, 4)]),
    ("Dropout", (0.3,), {}, [(2, 3)]),
    ("Dropout2d", (), {}, [(2, 3, 2, 2)]),
    ("AlphaDropout", (0.2,), {}, [(2, 3)]),
]


def _inputs(shapes, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for shape in shapes:
        if shape is LONG:
            out.append(torch.tensor([[1, 2, 4, 5], [4, 3, 8, 9]]))
        else:
            out.append(torch.randn(*shape, generator=g))
    return out


def _pair(name, args, kwargs):
    t = getattr(torch.nn, name)(*args, **kwargs)
    k = getattr(kael.nn, name)(*args, **kwargs)
    k.load_state_dict(t.state_dict())
    return k, t


@pytest.mark.parametrize(("name", "args", "kwargs", "shapes"), CASES, ids=lambda v: str(v)[:40])
def test_layer_matches_torch_in_eval(name, args, kwargs, shapes):
    k, t = _pair(name, args, kwargs)
    assert repr(k) == repr(t)
    k_state, t_state = k.state_dict(), t.state_dict()
    assert list(k_state) == list(t_state)
    for key, value in t_state.items():
        same(k_state[key], value)
    k.eval(), t.eval()
    inputs = _inputs(shapes)
    with torch.no_grad():
        expected = t(*[x.clone() for x in inputs])
    same(k(*[kael.tensor(x) for x in inputs]), expected)


TRAINING = [c for c in CASES if c[0].startswith(("BatchNorm", "InstanceNorm"))]


@pytest.mark.parametrize(("name", "args", "kwargs", "shapes"), TRAINING, ids=lambda v: str(v)[:40])
def test_norm_updates_running_stats_in_training_as_torch(name, args, kwargs, shapes):
    k, t = _pair(name, args, kwargs)
    for seed in range(3):  # three steps: the running averages and the batch count move
        inputs = _inputs(shapes, seed)
        with torch.no_grad():
            expected = t(*inputs)
        same(k(*[kael.tensor(x) for x in inputs]), expected)
        for key, value in t.state_dict().items():
            same(k.state_dict()[key], value)


@pytest.mark.parametrize("momentum", [None, 0.1])
def test_a_compiled_batch_norm_trains_its_running_stats_as_torch(momentum):
    """momentum=None averages over the batches counted so far: a 0-d tensor factor, no host
    read, so the plan repeats it (it raised Tensor.item() under kael.compile)."""
    k, t = _pair("BatchNorm1d", (4,), {"momentum": momentum})
    fast = kael.compile(k)
    for seed in range(4):
        inputs = _inputs([(3, 4, 2)], seed)
        with torch.no_grad():
            expected = t(*inputs)
        same(fast(*[kael.tensor(x) for x in inputs]), expected)
        for key, value in t.state_dict().items():
            same(k.state_dict()[key], value)
    assert fast.cache_info().traces == 1


@pytest.mark.parametrize("name", ["Dropout", "Dropout1d", "Dropout2d", "AlphaDropout", "RReLU"])
def test_random_layers_are_the_identity_or_fixed_in_eval_and_random_in_training(name):
    layer = getattr(kael.nn, name)()
    x = kael.full((64, 8, 4), -1.0)  # negative: RReLU's random slope shows
    assert layer.training
    trained = layer(x)
    assert not np.array_equal(trained.numpy(), x.numpy())
    layer.eval()
    expected = torch.nn.functional.rrelu(torch.tensor(x.numpy())) if name == "RReLU" else x
    np.testing.assert_array_equal(layer(x).numpy(), np.asarray(expected))


def test_conv_transpose_output_size_picks_output_padding_as_torch():
    k, t = _pair("ConvTranspose2d", (4, 6, 3), {"stride": 2})
    x = torch.randn(1, 4, 5, 5)
    for size in [(11, 11), (12, 12), (1, 6, 12, 11)]:
        with torch.no_grad():
            same(k(kael.tensor(x), output_size=size), t(x, output_size=size))


@pytest.mark.parametrize(
    ("size", "message"),
    [
        ((10, 10), "valid sizes range from [11, 11] to [12, 12]"),
        ((13, 12), "valid sizes range from [11, 11] to [12, 12]"),
        ((1, 2, 3), "output_size must have 2 or 4 elements (got 3)"),
    ],
)
def test_conv_transpose_refuses_an_unreachable_output_size(size, message):
    k, t = _pair("ConvTranspose2d", (4, 6, 3), {"stride": 2})
    x = torch.randn(1, 4, 5, 5)
    with pytest.raises(ValueError, match="output"):
        t(x, output_size=size)
    with pytest.raises(kael.ValueError) as got:
        k(kael.tensor(x), output_size=size)
    assert message in str(got.value)


BAD_CONSTRUCTIONS = [
    ("Conv2d", (6, 6, 3), {"groups": 0}, "groups must be a positive integer"),
    ("Conv2d", (5, 6, 3), {"groups": 2}, "in_channels must be divisible by groups"),
    ("Conv2d", (6, 5, 3), {"groups": 2}, "out_channels must be divisible by groups"),
    ("Conv2d", (6, 6, 3), {"padding": "full"}, "Invalid padding string 'full'"),
    ("Conv1d", (6, 6, 3), {"padding": "same", "stride": 2}, "not supported for strided"),
    ("Conv2d", (6, 6, 3), {"padding_mode": "wrap"}, "padding_mode='wrap'"),
    ("ConvTranspose2d", (6, 6, 3), {"padding_mode": "reflect"}, 'Only "zeros" padding mode'),
    ("GroupNorm", (4, 6), {}, "num_channels (6) must be divisible by num_groups (4)"),
    ("Dropout", (1.5,), {}, "between 0 and 1, but got 1.5"),
    ("Dropout", (-0.1,), {}, "between 0 and 1, but got -0.1"),
    ("FractionalMaxPool2d", (2,), {}, "either an output size, or a pooling ratio"),
    ("FractionalMaxPool2d", (2,), {"output_ratio": 1.5}, "output_ratio must be between 0 and 1"),
    ("Embedding", (10, 3), {"padding_idx": 10}, "padding_idx must be within num_embeddings"),
    ("Embedding", (10, 3), {"padding_idx": -11}, "padding_idx must be within num_embeddings"),
    ("TripletMarginWithDistanceLoss", (), {"margin": -1}, "greater than 0, got -1 instead"),
    ("TripletMarginLoss", (0,), {}, "expected margin to be greater than 0, got 0 instead"),
    ("MultiMarginLoss", (3,), {}, "only p == 1 and p == 2 supported"),
]


@pytest.mark.parametrize(("name", "args", "kwargs", "message"), BAD_CONSTRUCTIONS)
def test_bad_construction_raises_a_typed_error_as_torch_does(name, args, kwargs, message):
    with pytest.raises((ValueError, AssertionError)):
        getattr(torch.nn, name)(*args, **kwargs)
    with pytest.raises(kael.ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        getattr(kael.nn, name)(*args, **kwargs)


@pytest.mark.parametrize(
    ("name", "shape"),
    [("BatchNorm1d", (2, 4, 3, 3)), ("BatchNorm2d", (2, 4, 3)), ("InstanceNorm1d", (2, 4, 3, 1))],
)
def test_norm_refuses_an_input_of_the_wrong_rank(name, shape):
    k, t = _pair(name, (4,), {})
    with pytest.raises(ValueError, match="D input") as expected:
        t(torch.randn(*shape))
    with pytest.raises(kael.ValueError) as got:
        k(kael.randn(*shape))
    assert str(got.value) == str(expected.value)


def test_affine_instance_norm_refuses_a_channel_count_it_was_not_built_for():
    k = kael.nn.InstanceNorm1d(4, affine=True)
    with pytest.raises(kael.ValueError, match=r"num_features \(4\), but got: 3"):
        k(kael.randn(2, 3, 5))


def test_constructor_arguments_bind_as_torch_signatures_do():
    with pytest.raises(TypeError, match="value"):
        kael.nn.Threshold(0.1)
    with pytest.raises(TypeError, match="unexpected"):
        kael.nn.ReLU(unexpected=True)
    with pytest.raises(TypeError):
        kael.nn.GaussianNLLLoss(True)  # full is keyword-only, as in torch
    assert kael.nn.LeakyReLU(0.2, True).inplace is True


def test_embedding_from_pretrained_shares_the_rows():
    rows = kael.arange(12.0).reshape(4, 3)
    table = kael.nn.Embedding.from_pretrained(rows, padding_idx=1)
    assert table.weight.data_ptr() == rows.data_ptr()
    np.testing.assert_array_equal(table(kael.tensor([3, 0])).numpy(), rows.numpy()[[3, 0]])
    with pytest.raises(kael.ValueError, match="2-dimensional"):
        kael.nn.Embedding.from_pretrained(kael.ones(3))


def test_default_initialisation_follows_torch_bounds():
    torch_layer, layer = torch.nn.Linear(64, 32), kael.nn.Linear(64, 32)
    bound = 1 / 8
    for p in (layer.weight, layer.bias):
        values = p.numpy()
        assert values.min() >= -bound and values.max() <= bound
        assert values.std() > bound / 4  # not a constant fill
    assert torch_layer.weight.abs().max() <= bound
    conv = kael.nn.Conv2d(4, 8, 3, groups=2)
    assert np.abs(conv.weight.numpy()).max() <= 1 / np.sqrt(2 * 9)
    table = kael.nn.Embedding(1000, 16, padding_idx=3)
    assert abs(table.weight.numpy().std() - 1) < 0.05
    assert not table.weight.numpy()[3].any()


def _declared_classes():
    from kael.nn.modules.declared import DeclaredModule

    return [
        name
        for name in kael.nn.modules.__all__
        if isinstance(getattr(kael.nn, name), type)
        and issubclass(getattr(kael.nn, name), DeclaredModule)
    ]


@pytest.mark.parametrize("name", _declared_classes())
def test_declared_modules_forward_takes_torchs_parameter_names(name):
    import inspect

    torch_forward = inspect.signature(getattr(torch.nn, name).forward)
    expected = [(p.name, p.default) for p in list(torch_forward.parameters.values())[1:]]
    kael_forward = getattr(kael.nn, name).forward_signature.parameters.values()
    assert [(p.name, p.default) for p in kael_forward] == expected


KEYWORD_CALLS = [
    ("MSELoss", (), {"input": (3, 4), "target": (3, 4)}),
    ("ReLU", (), {"input": (3, 4)}),
    ("CrossEntropyLoss", (), {"input": (3, 4), "target": (3, 4)}),
    ("PoissonNLLLoss", (), {"log_input": (3, 4), "target": (3, 4)}),
    ("MarginRankingLoss", (), {"input1": (3,), "input2": (3,), "target": (3,)}),
    ("Softmax", (1,), {"input": (3, 4)}),
    ("PairwiseDistance", (), {"x2": (3, 4), "x1": (3, 4)}),
]


@pytest.mark.parametrize(("name", "args", "shapes"), KEYWORD_CALLS, ids=lambda v: str(v)[:20])
def test_declared_modules_take_their_inputs_by_keyword_as_torch(name, args, shapes):
    k, t = _pair(name, args, {})
    inputs = dict(zip(shapes, _inputs(shapes.values()), strict=True))
    expected = t(**inputs)
    same(k(**{n: kael.tensor(x) for n, x in inputs.items()}), expected)


def test_max_unpool_takes_output_size_by_keyword_as_torch():
    x = torch.randn(1, 1, 6, 7)
    out, idx = torch.nn.functional.max_pool2d(x, 2, return_indices=True)
    expected = torch.nn.MaxUnpool2d(2)(out, idx, output_size=[6, 7])
    k_out, k_idx = kael.tensor(out), kael.tensor(idx)
    same(kael.nn.MaxUnpool2d(2)(k_out, indices=k_idx, output_size=[6, 7]), expected)
    with pytest.raises(kael.TypeError, match="unexpected keyword argument 'size'"):
        kael.nn.MaxUnpool2d(2)(k_out, k_idx, size=[6, 7])
    with pytest.raises(kael.TypeError, match="multiple values for argument 'input'"):
        kael.nn.ReLU()(k_out, input=k_out)


@pytest.mark.parametrize("lib", [torch, kael], ids=["torch", "kael"])
def test_embedding_freeze_clears_requires_grad_as_torch(lib):
    rows = lib.ones(4, 3)
    assert not lib.nn.Embedding.from_pretrained(rows).weight.requires_grad
    assert lib.nn.Embedding.from_pretrained(rows, freeze=False).weight.requires_grad
    assert not lib.nn.EmbeddingBag.from_pretrained(rows).weight.requires_grad
    assert lib.nn.EmbeddingBag.from_pretrained(rows, False).weight.requires_grad
    assert not lib.nn.Embedding(4, 3, _freeze=True).weight.requires_grad
    assert lib.nn.Embedding(4, 3).weight.requires_grad


def test_from_pretrained_takes_torchs_positional_settings():
    k_rows, t_rows = kael.ones(4, 3), torch.ones(4, 3)
    for cls, args in (("Embedding", (1, 2.0)), ("EmbeddingBag", (1.0, 2.0, False, "sum"))):
        k = getattr(kael.nn, cls).from_pretrained(k_rows, True, *args)
        t = getattr(torch.nn, cls).from_pretrained(t_rows, True, *args)
        assert repr(k) == repr(t)
    with pytest.raises(kael.TypeError, match="too many positional arguments"):
        kael.nn.Embedding.from_pretrained(k_rows, True, 1, 2.0, 2.0, False, False, 0)


def test_batch_norm_takes_an_empty_batch_in_training_as_torch():
    k, t = _pair("BatchNorm1d", (3,), {})
    with torch.no_grad():
        same(k(kael.ones(0, 3)), t(torch.ones(0, 3)))
    for key, value in t.state_dict().items():
        same(k.state_dict()[key], value)
    assert int(k.num_batches_tracked.item()) == 1
    with pytest.raises(kael.ValueError, match=r"more than 1 value per channel.*\[1, 3\]"):
        k(kael.ones(1, 3))


def test_instance_norm_names_a_single_spatial_element_as_torch():
    with pytest.raises(ValueError, match="more than 1 spatial element") as theirs:
        torch.nn.InstanceNorm1d(3)(torch.ones(2, 3, 1))
    with pytest.raises(kael.ValueError) as ours:
        kael.nn.InstanceNorm1d(3)(kael.ones(2, 3, 1))
    assert str(ours.value) == str(theirs.value).replace("torch.Size(", "").replace("])", "]")


def test_upsample_refuses_recompute_scale_factor_with_an_explicit_size():
    message = "recompute_scale_factor is not meaningful with an explicit size."
    with pytest.raises(ValueError, match=message):
        torch.nn.Upsample(size=7, recompute_scale_factor=True)(torch.ones(1, 2, 5))
    with pytest.raises(kael.ValueError, match=message):
        kael.nn.Upsample(size=7, recompute_scale_factor=True)(kael.ones(1, 2, 5))
    assert kael.nn.Upsample(size=7, recompute_scale_factor=False)(kael.ones(1, 2, 5)).shape[-1] == 7


def test_multi_margin_loss_refuses_a_weight_that_is_not_1d_as_torch():
    message = "expected weight to be None or 1D tensor, got 2D instead"
    with pytest.raises(ValueError, match=message):
        torch.nn.MultiMarginLoss(weight=torch.ones(2, 2))
    with pytest.raises(kael.ValueError, match=message):
        kael.nn.MultiMarginLoss(weight=kael.ones(2, 2))


def test_triplet_with_distance_loss_defaults_to_a_pairwise_distance_submodule():
    k = kael.nn.TripletMarginWithDistanceLoss()
    t = torch.nn.TripletMarginWithDistanceLoss()
    assert repr(k) == repr(t)
    assert [type(m).__name__ for m in k.children()] == [type(m).__name__ for m in t.children()]
    inputs = _inputs([(3, 4)] * 3)
    same(k(*[kael.tensor(x) for x in inputs]), t(*inputs))


@pytest.mark.parametrize("name", ["UpsamplingNearest2d", "UpsamplingBilinear2d"])
def test_fixed_mode_upsamplings_are_upsamples_as_torch(name):
    assert isinstance(getattr(torch.nn, name)(scale_factor=2), torch.nn.Upsample)
    assert isinstance(getattr(kael.nn, name)(scale_factor=2), kael.nn.Upsample)


def test_sync_batch_norm_is_batch_norm_in_one_process_as_torch():
    theirs, ours = torch.nn.SyncBatchNorm(3), kael.nn.SyncBatchNorm(3)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    x = np.random.default_rng(0).standard_normal((4, 3, 2)).astype(np.float32)
    want = theirs(torch.tensor(x)).detach().numpy()  # training: batch statistics
    np.testing.assert_allclose(ours(kael.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-6)
    with pytest.raises(kael.ValueError, match="expected at least 2D input"):
        ours(kael.ones(3))


def test_convert_sync_batchnorm_keeps_state_and_mode():
    bn = kael.nn.BatchNorm2d(3)
    bn.running_mean.fill_(2.0)
    model = kael.nn.Sequential(bn, kael.nn.ReLU()).eval()
    converted = kael.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert type(converted[0]) is kael.nn.SyncBatchNorm and not converted[0].training
    assert converted[0].running_mean.tolist() == [2.0, 2.0, 2.0]
    assert converted[0].weight is bn.weight


def test_adaptive_log_softmax_matches_torch():
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 10], div_value=2.0)
    ours = kael.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 10], div_value=2.0)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict())
    x = np.random.default_rng(0).standard_normal((6, 8)).astype(np.float32)
    t = np.array([1, 7, 12, 19, 0, 10])
    got, want = ours(kael.tensor(x), kael.tensor(t)), theirs(torch.tensor(x), torch.tensor(t))
    np.testing.assert_allclose(
        got.output.numpy(), want.output.detach().numpy(), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(got.loss.item(), want.loss.item(), rtol=1e-6)
    full = ours.log_prob(kael.tensor(x)).numpy()
    np.testing.assert_allclose(full, theirs.log_prob(torch.tensor(x)).detach().numpy(), atol=1e-5)
    assert ours.predict(kael.tensor(x)).tolist() == theirs.predict(torch.tensor(x)).tolist()
    single = ours(kael.tensor(x[0]), kael.tensor(t[0]))
    assert single.output.shape == () and abs(single.output.item() - got.output[0].item()) < 1e-6


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 20, []), "length larger than 0"),
        (lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [10, 5]), "sorted in an increasing"),
        (lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 10])(L.ones(2, 8), L.tensor([1, 25])),
         r"Target values should be in \[0, 19\]"),
    ],
)  # fmt: skip
def test_adaptive_log_softmax_refuses_as_torch(build, message):
    with pytest.raises((ValueError, RuntimeError), match=message):
        build(torch)
    with pytest.raises(kael.Error, match=message):
        build(kael)


def test_group_norm_of_no_groups_is_a_typed_error_naming_the_values():
    with pytest.raises(ZeroDivisionError):
        torch.nn.GroupNorm(0, 4)
    with pytest.raises(kael.ValueError, match="num_groups must be positive, got num_groups=0"):
        kael.nn.GroupNorm(0, 4)
    with pytest.raises(
        ValueError, match=r"num_channels \(4\) must be divisible by num_groups \(3\)"
    ):
        torch.nn.GroupNorm(3, 4)
    with pytest.raises(
        kael.ValueError, match=r"num_channels \(4\) must be divisible by num_groups \(3\)"
    ):
        kael.nn.GroupNorm(3, 4)


@pytest.mark.parametrize("kwargs", [{}, {"scale_factor": 0}])
def test_upsample_without_a_size_or_scale_says_so_as_torch(kwargs):
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        torch.nn.Upsample(**kwargs)(torch.randn(1, 2, 6))
    with pytest.raises(kael.ValueError, match="either size or scale_factor should be defined"):
        kael.nn.Upsample(**kwargs)(kael.randn(1, 2, 6))
