"""kael.nn.Module's rules, each as torch.nn.Module keeps it: registration by assignment,
traversal order, state_dict keys, load_state_dict's checks and messages, modes, dtype and
device moves, hooks, copying, and a torch checkpoint loaded into the same architecture."""

import copy
import pickle
import warnings
from collections import OrderedDict
from types import MappingProxyType

import numpy as np
import pytest
import torch
from parity_helpers import same

import kael
from kael import nn


class Block(nn.Module):
    def __init__(self, lib=nn):
        super().__init__()
        self.fc = lib.Linear(4, 3)
        self.norm = lib.LayerNorm(3)
        self.register_buffer("steps", (kael if lib is nn else torch).zeros(1))
        self.register_buffer("cache", (kael if lib is nn else torch).ones(2), persistent=False)

    def forward(self, x):
        return self.norm(self.fc(x)).relu()


class TorchBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.norm = torch.nn.LayerNorm(3)
        self.register_buffer("steps", torch.zeros(1))
        self.register_buffer("cache", torch.ones(2), persistent=False)

    def forward(self, x):
        return self.norm(self.fc(x)).relu()


def _models():
    k = nn.Sequential(Block(), nn.Dropout(0.5), Block.__new__(Block))
    nn.Module.__init__(k[2])
    k[2].fc, k[2].norm = nn.Linear(3, 4), nn.LayerNorm(4)
    t = torch.nn.Sequential(TorchBlock(), torch.nn.Dropout(0.5), torch.nn.Module())
    t[2].fc, t[2].norm = torch.nn.Linear(3, 4), torch.nn.LayerNorm(4)
    return k, t


def test_assignment_registers_parameters_buffers_and_modules_in_order():
    block = Block()
    assert [name for name, _ in block.named_parameters()] == [
        "fc.weight", "fc.bias", "norm.weight", "norm.bias",
    ]  # fmt: skip
    assert [name for name, _ in block.named_buffers()] == ["steps", "cache"]
    assert [name for name, _ in block.named_children()] == ["fc", "norm"]
    assert [name for name, _ in block.named_modules()] == ["", "fc", "norm"]
    assert list(block.state_dict()) == list(TorchBlock().state_dict())


def test_state_dict_keys_and_values_match_torch_after_loading_a_torch_checkpoint():
    k, t = _models()
    result = k.load_state_dict(t.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert list(k.state_dict()) == list(t.state_dict())
    for key, value in t.state_dict().items():
        same(k.state_dict()[key], value)
    k.eval(), t.eval()
    x = torch.randn(5, 4)
    k_block, t_block = k[0], t[0]
    with torch.no_grad():
        same(k_block(kael.tensor(x)), t_block(x))


def test_state_dict_shares_the_module_elements():
    layer = nn.Linear(2, 2)
    layer.state_dict()["weight"].fill_(3.0)
    assert (layer.weight.numpy() == 3.0).all()
    assert type(layer.state_dict()["weight"]) is kael.Tensor
    assert type(layer.state_dict(keep_vars=True)["weight"]) is nn.Parameter


def test_load_state_dict_accepts_numpy_and_kael_tensors_and_converts_dtype():
    layer = nn.Linear(2, 3)
    layer.load_state_dict(
        {"weight": np.ones((3, 2), np.float64), "bias": kael.arange(3, dtype=kael.int64)}
    )
    assert layer.weight.dtype is kael.float32 and (layer.weight.numpy() == 1).all()
    np.testing.assert_array_equal(layer.bias.numpy(), [0, 1, 2])


def test_load_state_dict_names_missing_and_unexpected_keys_as_torch():
    k, t = _models()
    state = {key: value for key, value in t.state_dict().items() if "norm" not in key}
    state["0.extra"] = torch.ones(1)
    with pytest.raises(RuntimeError) as expected:
        t.load_state_dict(state)
    with pytest.raises(kael.Error) as got:
        k.load_state_dict(state)
    assert str(got.value) == str(expected.value)
    assert tuple(k.load_state_dict(state, strict=False)) == tuple(
        t.load_state_dict(state, strict=False)
    )


def test_load_state_dict_refuses_a_shape_mismatch_even_when_not_strict():
    layer = nn.Linear(2, 3)
    before = layer.weight.numpy().copy()
    with pytest.raises(kael.Error, match=r"size mismatch for weight: copying a param with shape"):
        layer.load_state_dict({"weight": np.ones((2, 2), np.float32)}, strict=False)
    np.testing.assert_array_equal(layer.weight.numpy(), before)


def test_load_state_dict_refuses_a_value_that_is_not_a_tensor():
    with pytest.raises(kael.Error, match='parameter named "bias", expected a kael.Tensor'):
        nn.Linear(2, 3).load_state_dict({"weight": np.ones((3, 2)), "bias": [1, 2, 3]})
    with pytest.raises(kael.TypeError, match="dict-like"):
        nn.Linear(2, 3).load_state_dict([1, 2])


def test_load_state_dict_with_assign_puts_the_checkpoint_tensors_in():
    layer = nn.Linear(2, 3)
    weight = kael.ones(3, 2)
    layer.load_state_dict({"weight": weight, "bias": kael.zeros(3)}, assign=True)
    assert isinstance(layer.weight, nn.Parameter)
    assert layer.weight.data_ptr() == weight.data_ptr()


def test_assignment_rules_and_their_errors():
    layer = nn.Linear(2, 2)
    with pytest.raises(kael.TypeError, match="cannot assign 'kael.Tensor' as parameter 'weight'"):
        layer.weight = kael.ones(2, 2)
    layer.bias = None
    assert layer.bias is None and "bias" not in layer.state_dict()
    seq = nn.Sequential(nn.ReLU())
    with pytest.raises(kael.TypeError, match="as child module '0'"):
        seq[0] = 3
    block = Block()
    block.steps = kael.full((1,), 7.0)
    assert block.state_dict()["steps"].item() == 7.0
    block.extra = nn.Buffer(kael.ones(3), persistent=False)
    assert "extra" in dict(block.named_buffers()) and "extra" not in block.state_dict()


@pytest.mark.parametrize(
    ("name", "error", "match"),
    [
        ("a.b", kael.KeyError, "contain"),
        ("", kael.KeyError, "empty string"),
        ("forward", kael.KeyError, "attribute 'forward' already exists"),
        (3, kael.TypeError, "should be a string"),
    ],
)
def test_register_buffer_refuses_bad_names(name, error, match):
    with pytest.raises(error, match=match):
        nn.Module().register_buffer(name, kael.ones(1))


def test_missing_attribute_is_an_attribute_error_naming_the_module():
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nope'"):
        _ = nn.Linear(1, 1).nope
    assert not hasattr(nn.Linear(1, 1), "nope")


def test_assigning_before_init_is_refused():
    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(kael.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_shared_submodules_and_parameters_are_listed_once():
    shared = nn.Linear(2, 2)
    model = nn.Sequential(shared, shared)
    assert len(list(model.parameters())) == 2
    assert len(list(model.modules())) == 2
    assert list(model.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_train_and_eval_reach_every_submodule():
    k, _ = _models()
    assert all(m.training for m in k.modules())
    assert k.eval() is k and not any(m.training for m in k.modules())
    k.train()
    assert all(m.training for m in k.modules())
    with pytest.raises(kael.ValueError, match="boolean"):
        k.train("yes")


def test_to_casts_floating_state_and_keeps_the_parameter_objects():
    block = Block()
    weight = block.fc.weight
    block.register_buffer("count", kael.zeros(1, dtype=kael.int64))
    assert block.to(kael.float64) is block
    assert block.fc.weight is weight and weight.dtype is kael.float64
    assert block.steps.dtype is kael.float64 and block.count.dtype is kael.int64
    block.half()
    assert weight.dtype is kael.float16
    block.float()
    assert weight.dtype is kael.float32
    with pytest.raises(kael.TypeError, match="only accepts floating point or complex"):
        block.to(kael.int32)


def test_to_casts_complex_state_and_takes_complex_dtypes_as_torch():
    """A complex buffer takes a real dtype (its imaginary part dropped, with Tensor.to's
    warning); a complex dtype makes floating state complex, with torch's warning."""
    models = []
    for lib in (kael, torch):
        m = lib.nn.Linear(2, 2)
        m.load_state_dict({"weight": lib.eye(2), "bias": lib.tensor([0.5, -1.0])})
        m.register_buffer("phase", lib.tensor([1 + 2j, -3j]))
        models.append(m)
    with pytest.warns(UserWarning, match="imaginary part"):
        models[0].to(kael.float64)
    with warnings.catch_warnings():  # torch warns once per process (TORCH_WARN_ONCE)
        warnings.simplefilter("ignore")
        models[1].to(torch.float64)
    assert models[0].phase.dtype is kael.float64 and models[0].weight.dtype is kael.float64
    assert models[0].phase.tolist() == models[1].phase.tolist() == [1.0, 0.0]
    for m, dtype in zip(models, (kael.complex64, torch.complex64)):
        with pytest.warns(UserWarning, match="Complex modules"):
            m.to(dtype)
    assert models[0].weight.dtype is kael.complex64 and isinstance(models[0].weight, nn.Parameter)
    got = models[0](kael.tensor([1 + 1j, 2.0], dtype=kael.complex64))
    want = models[1](torch.tensor([1 + 1j, 2.0], dtype=torch.complex64))
    assert got.tolist() == want.tolist()


def test_forward_hooks_see_and_replace_inputs_and_outputs():
    layer, seen = nn.Identity(), []
    pre = layer.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    post = layer.register_forward_hook(lambda m, args, out: seen.append(out.item()) or out + 1)
    assert layer(kael.tensor(3.0)).item() == 7.0 and seen == [6.0]
    pre.remove()
    with post:
        assert layer(kael.tensor(3.0)).item() == 4.0
    assert layer(kael.tensor(3.0)).item() == 3.0


def test_forward_hooks_with_kwargs_and_prepend_run_in_order():
    order = []
    layer = nn.Identity()
    layer.register_forward_hook(lambda m, a, out: order.append("late"))
    layer.register_forward_hook(lambda m, a, out: order.append("early"), prepend=True)
    layer.register_forward_pre_hook(lambda m, a, kw: (a, kw), with_kwargs=True)
    layer(kael.ones(1))
    assert order == ["early", "late"]


def test_apply_visits_children_before_the_parent():
    seen = []
    nn.Sequential(nn.Linear(1, 1), nn.ReLU()).apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "ReLU", "Sequential"]


def test_deepcopy_and_pickle_copy_the_elements():
    block = Block()
    twin = copy.deepcopy(block)
    twin.fc.weight.fill_(0.0)
    assert isinstance(twin.fc.weight, nn.Parameter)
    assert np.abs(block.fc.weight.numpy()).sum() > 0
    loaded = pickle.loads(pickle.dumps(block))
    same(loaded.state_dict()["fc.weight"], torch.from_numpy(block.fc.weight.numpy()))


def test_repr_nests_as_torch():
    k, t = _models()
    assert repr(k[0]) == repr(t[0]).replace("TorchBlock", "Block")
    assert repr(nn.Sequential()) == repr(torch.nn.Sequential())


def test_get_submodule_parameter_and_buffer_by_path():
    k, _ = _models()
    assert k.get_submodule("0.fc") is k[0].fc
    assert k.get_parameter("2.norm.bias") is k[2].norm.bias
    assert k.get_buffer("0.steps") is k[0].steps
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        k.get_submodule("0.nope")


def test_requires_grad_is_a_flag_parameters_keep_as_torch_does():
    layer = nn.Linear(2, 2)
    assert all(p.requires_grad for p in layer.parameters())  # torch's default: True
    assert sum(p.numel() for p in layer.parameters() if p.requires_grad) == 6
    assert layer.requires_grad_(False) is layer
    assert not any(p.requires_grad for p in layer.parameters())
    layer.weight.requires_grad = True  # the freezing loop's assignment
    assert layer.weight.requires_grad and not layer.bias.requires_grad
    with pytest.raises(kael.TypeError, match="requires_grad must be a bool"):
        layer.weight.requires_grad = 1
    assert layer.zero_grad() is None and layer.weight.grad is None
    with pytest.raises(kael.Error, match="no autograd"):
        kael.ones(1).requires_grad_(True)  # a plain tensor still refuses


def test_parameter_shares_its_data_and_checks_its_arguments():
    data = kael.ones(2)
    param = nn.Parameter(data)
    assert param.data_ptr() == data.data_ptr() and param.requires_grad
    assert repr(param).startswith("Parameter containing:\n")
    assert nn.Parameter().shape == (0,)
    with pytest.raises(kael.TypeError, match="must be a Tensor"):
        nn.Parameter([1.0])
    with pytest.raises(kael.TypeError, match="requires_grad must be a bool"):
        nn.Parameter(data, requires_grad=1)


def test_a_compiled_model_matches_eager_and_sees_loaded_weights():
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2)).eval()
    fast = kael.compile(model)
    x = kael.randn(3, 4)
    np.testing.assert_allclose(fast(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-6)
    torch_model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 2))
    model.load_state_dict(torch_model.state_dict())
    with torch.no_grad():
        expected = torch_model(torch.from_numpy(x.numpy()))
    np.testing.assert_allclose(fast(x).numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


def test_a_compiled_model_is_named_after_its_class_in_inspection():
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU()).eval()
    fast = kael.compile(model)
    assert fast.__name__ == "Sequential"
    assert str(fast.inspect(kael.randn(2, 4))).startswith("compiled Sequential:")


def test_a_compiled_model_follows_train_eval_and_container_edits():
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3), nn.Dropout(0.5))
    fast = kael.compile(model)
    x = kael.randn(8, 3)
    fast(x)
    model.eval()  # batch statistics -> running statistics, dropout -> identity
    np.testing.assert_allclose(fast(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-6)
    del model[2]
    model[1].eps = 0.5
    np.testing.assert_allclose(fast(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-6)


def test_a_plain_tensors_in_place_views_do_not_retrace_a_compiled_model():
    model = nn.Linear(3, 3)
    fast = kael.compile(model)
    x, other = kael.randn(2, 3), kael.ones(4)
    for _ in range(4):
        fast(x)
        other.unsqueeze_(0).squeeze_(0)
    assert fast.cache_info().traces == 1


def test_train_calls_each_childs_own_train_as_torch():
    class Frozen(nn.BatchNorm1d):
        def train(self, mode=True):
            return super().train(False)

    model = nn.Sequential(nn.Linear(3, 3), Frozen(3)).train()
    assert model.training and model[0].training and not model[1].training


def test_containers_replace_and_insert_as_torch():
    from collections import OrderedDict

    named = nn.Sequential(OrderedDict(a=nn.ReLU(), b=nn.Tanh()))
    named[0] = nn.GELU()
    assert list(named._modules) == ["a", "b"] and isinstance(named.a, nn.GELU)
    seq = nn.Sequential(nn.ReLU())
    with pytest.raises(kael.IndexError, match="Index out of range: 5"):
        seq.insert(5, nn.Tanh())
    with pytest.raises(kael.TypeError, match="kael.nn.Module"):
        seq.insert(0, 3)
    params = nn.ParameterList([kael.ones(2)])
    params[0] = kael.zeros(2)
    assert isinstance(params[0], nn.Parameter) and params[0].tolist() == [0.0, 0.0]


def test_named_parameters_without_dedup_lists_shared_modules_twice():
    shared = nn.Linear(1, 1)
    k = nn.Sequential(shared, shared)
    t = torch.nn.Sequential(*[torch.nn.Linear(1, 1)] * 2)
    assert [n for n, _ in k.named_parameters(remove_duplicate=False)] == [
        n for n, _ in t.named_parameters(remove_duplicate=False)
    ]


def test_load_state_dict_reads_legacy_checkpoints_as_torch():
    k, t = nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    legacy = {n: v for n, v in t.state_dict().items() if n != "num_batches_tracked"}
    assert tuple(t.load_state_dict(legacy)) == tuple(k.load_state_dict(legacy)) == ([], [])
    holder = nn.Module()
    holder.scale = nn.Parameter(kael.tensor(1.0))
    holder.load_state_dict({"scale": np.array([4.0], np.float32)})  # 0-d saved as 1-d
    assert holder.scale.item() == 4.0


def test_unexpected_keys_come_in_module_order_as_torch():
    k, t = _models()
    state = dict(t.state_dict())
    extra = {"2.zz": torch.ones(1), "0.fc.zz": torch.ones(1), "zz": torch.ones(1)}
    state = {**extra, **state}
    assert k.load_state_dict(state, strict=False).unexpected_keys == list(
        t.load_state_dict(state, strict=False).unexpected_keys
    )


def test_rnn_reads_its_fourth_positional_argument_as_the_nonlinearity():
    k, t = nn.RNN(3, 4, 1, "relu", False), torch.nn.RNN(3, 4, 1, "relu", False)
    assert (k.nonlinearity, k.bias) == (t.nonlinearity, t.bias) == ("relu", False)


@pytest.mark.parametrize("name", ["Softmax", "Softmin", "LogSoftmax"])
@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 4), (2, 3, 4, 5)])
def test_softmax_modules_without_dim_pick_torchs_legacy_dim(name, shape):
    x = torch.randn(*shape)
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        expected = getattr(torch.nn, name)()(x)
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        got = getattr(nn, name)()(kael.tensor(x))
    same(got, expected)


def test_models_with_functions_inside_pickle():
    layer = nn.TransformerEncoderLayer(8, 2, 16).eval()
    again = pickle.loads(pickle.dumps(layer))
    x = kael.randn(3, 2, 8)
    np.testing.assert_allclose(again(x).numpy(), layer(x).numpy(), rtol=1e-6, atol=1e-6)
    assert pickle.loads(pickle.dumps(kael.nn.functional.relu)) is kael.nn.functional.relu


def test_state_dict_and_to_take_torchs_positional_forms():
    layer = nn.Linear(2, 2)
    with pytest.warns(FutureWarning, match="Positional args"):
        assert list(layer.state_dict(None, "pre.")) == ["pre.weight", "pre.bias"]
    assert layer.to("cpu", kael.float64, False).weight.dtype is kael.float64


def test_parameter_dict_from_a_plain_dict_is_sorted_as_torch():
    k = nn.ParameterDict({"b": kael.ones(1), "a": kael.ones(1)})
    t = torch.nn.ParameterDict({"b": torch.ones(1), "a": torch.ones(1)})
    assert list(k.state_dict()) == list(t.state_dict()) == ["a", "b"]


def test_a_compiled_model_without_parameters_rereads_a_changed_setting():
    layer = nn.LeakyReLU(0.2)
    fast = kael.compile(layer)
    x = kael.randn(16)
    fast(x)
    layer.negative_slope = 0.5
    np.testing.assert_array_equal(fast(x).numpy(), layer(x).numpy())


def test_a_compiled_closure_over_a_module_without_parameters_follows_its_settings():
    act, drop = nn.LeakyReLU(0.1), nn.Dropout(0.5)
    f = kael.compile(lambda x: act(x))
    g = kael.compile(lambda x: drop(x))
    x = kael.tensor([-1.0, 2.0])
    f(x), g(kael.ones(8))
    act.negative_slope = 0.5
    drop.eval()
    assert f(x).tolist() == [-0.5, 2.0]
    assert g(kael.ones(8)).tolist() == [1.0] * 8


def test_a_compiled_model_follows_a_buffer_moved_in_place():
    class Shift(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", kael.arange(6.0).reshape(2, 3))

        def forward(self, x):
            return x + self.b.sum(0)

    model = Shift()
    fast = kael.compile(model)
    x = kael.zeros(3)
    fast(x)
    model.b.set_(kael.full((2, 3), 100.0))
    assert fast(x).tolist() == model(x).tolist() == [200.0] * 3


def test_a_layout_change_of_a_modules_buffer_in_forward_is_not_replayed():
    class Flip(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", kael.arange(6.0).reshape(2, 3))

        def forward(self, x):
            self.b.t_()  # a side effect on state the plan does not own
            return x + self.b.sum(0)

    model, twin = Flip(), Flip()
    fast = kael.compile(model)
    for _ in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = fast(kael.zeros(model.b.shape[0]))
        expected = twin(kael.zeros(twin.b.shape[0]))
        assert got.tolist() == expected.tolist() and model.b.shape == twin.b.shape


def test_building_modules_does_not_retrace_a_compiled_model():
    model = nn.Linear(4, 4)
    fast = kael.compile(model)
    x = kael.randn(2, 4)
    for _ in range(4):
        fast(x)
        nn.MSELoss()  # a module nothing compiled has read: no retrace
    assert fast.cache_info().traces == 1


def _cached_model(lib):
    class Cached(lib.nn.Module):  # a decoding step's cache, kept by rebinding an attribute
        def __init__(self):
            super().__init__()
            self.proj, self.cache, self.calls = lib.nn.Linear(4, 4), None, 0

        def forward(self, x):
            self.calls += 1
            k = self.proj(x)
            self.cache = k if self.cache is None else lib.cat([self.cache, k])
            return self.cache.mean(0)

    return Cached()


def test_a_compiled_model_that_sets_its_attributes_runs_eagerly_as_torch():
    # a plan would skip forward's Python: the cache and the counter would stop at call 1
    ours, theirs = _cached_model(kael), _cached_model(torch)
    ours.load_state_dict({k: kael.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    fast = kael.compile(ours)
    rows = np.random.default_rng(5).standard_normal((4, 1, 4), dtype=np.float32)
    with pytest.warns(UserWarning, match="it sets 'calls' of a Cached module inside the call"):
        for row in rows:
            got, want = fast(kael.tensor(row)), theirs(torch.from_numpy(row)).detach()
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    assert ours.calls == theirs.calls == 4 and ours.cache.shape == (4, 4)


def _logging_model(lib):
    class Counts:
        seen = 0

    class Logging(lib.nn.Module):  # its forward changes plain values it holds, in place
        def __init__(self):
            super().__init__()
            self.proj, self.log, self.stats, self.counts = (
                lib.nn.Linear(2, 2),
                [],
                {"n": 0},
                Counts(),
            )

        def forward(self, x):
            self.log.append(x.shape[0])
            self.stats["n"] += 1
            self.counts.seen += x.shape[0]
            return self.proj(x)

    return Logging()


def test_a_compiled_model_changing_its_plain_values_in_place_runs_eagerly_as_torch():
    """self.log.append(...), self.stats["n"] += 1, self.counts.seen += n in forward: a plan
    would skip that Python after the first call, silently (the list stayed at 1 entry)."""
    ours, theirs = _logging_model(kael), _logging_model(torch)
    ours.load_state_dict({k: kael.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    fast = kael.compile(ours)
    with pytest.warns(UserWarning, match="it changes 'log' \\(a list\\) of a Logging module"):
        for n in (1, 2, 2, 3):
            row = np.ones((n, 2), dtype=np.float32)
            got, want = fast(kael.tensor(row)), theirs(torch.from_numpy(row)).detach()
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert ours.log == theirs.log == [1, 2, 2, 3]
    assert ours.stats == theirs.stats == {"n": 4} and ours.counts.seen == theirs.counts.seen == 8


def test_a_cache_a_forward_fills_once_gets_a_plan_from_the_second_call():
    class Memo(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj, self.memo = nn.Linear(2, 2), {}

        def forward(self, x):
            if "scale" not in self.memo:  # filled by the first call only
                self.memo["scale"] = 2.0
            return self.proj(x) * self.memo["scale"]

    model = Memo()
    fast, x = kael.compile(model), kael.ones(1, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback, so no warning
        results = [fast(x) for _ in range(4)]
    assert all(r.tolist() == model(x).tolist() for r in results)
    info = fast.cache_info()
    assert info.traces == 2 and info.hits == 2  # the filling call traced again, then a plan


def test_a_side_effect_in_one_signature_retraces_the_others_that_read_the_state():
    class Growing(nn.Module):  # a buffer grown to the largest batch seen
        def __init__(self):
            super().__init__()
            self.register_buffer("seen", kael.zeros(0))

        def forward(self, x):
            if self.seen.shape[0] < x.shape[0]:
                self.seen.resize_(x.shape[0]).zero_()
            self.seen[: x.shape[0]] += x
            return self.seen * 1

    sizes = (2, 2, 4, 4, 2, 2)
    eager = Growing()
    want = [eager(kael.ones(n)).tolist() for n in sizes]  # all before: no move in between
    fast = kael.compile(Growing())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert [fast(kael.ones(n)).tolist() for n in sizes] == want


def test_a_model_with_side_effects_stays_eager_and_leaves_other_plans_alone():
    ours, twin = _cached_model(kael), _cached_model(kael)
    twin.load_state_dict(ours.state_dict())
    fast, plain = kael.compile(ours), kael.compile(nn.Sequential(nn.Linear(4, 4), nn.ReLU()))
    x = kael.randn(1, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(6):
            assert fast(x).tolist() == twin(x).tolist()
            plain(x)
    assert fast.cache_info().traces == 2  # traced again once, then eager for good
    assert plain.cache_info().traces == 1  # the other model's changes are not its own


def test_a_compiled_function_reading_parameters_by_iteration_sees_them_rebound():
    # parameters() and state_dict() read a module without its attributes: the trace still
    # notes the module, so rebinding its parameters retraces the function
    model = nn.Linear(3, 1)
    by_parameters = kael.compile(lambda x: sum(p.sum() for p in model.parameters()) + x)
    by_state = kael.compile(lambda x: sum(t.sum() for t in model.state_dict().values()) + x)
    x = kael.zeros(1)
    for fn in (by_parameters, by_state):
        fn(x)
    model.weight = nn.Parameter(kael.ones(1, 3))
    model.bias = nn.Parameter(kael.zeros(1))
    for fn in (by_parameters, by_state):
        assert fn(x).tolist() == [3.0]


def test_modules_a_traced_call_builds_are_its_own_to_set_up():
    def fn(x):
        layer = nn.Linear(4, 4)  # built (its attributes set) inside the call
        layer.weight.data.fill_(0.5)
        return layer(x) + 1

    fast = kael.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            x = kael.randn(2, 4)
            got = fast(x)
            assert got.shape == (2, 4) and fast.cache_info().traces == 1


def test_modules_that_define_eq_are_told_apart_by_identity_in_a_trace():
    class Comparable(nn.Module):  # __eq__ without __hash__: unhashable, as in Python
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def __eq__(self, other):
            return isinstance(other, Comparable)

        def forward(self, x):
            return self.lin(x)

    kept = Comparable()
    fast = kael.compile(lambda x: Comparable()(x).shape[-1] * kept(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            x = kael.randn(1, 2)
            assert fast(x).tolist() == (2 * kept(x)).tolist()
    assert fast.cache_info().traces == 1


def test_forward_hooks_of_a_compiled_model_run_at_every_call():
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh()).eval()
    fast, seen, x = kael.compile(model), [], kael.randn(2, 4)
    model[0].register_forward_hook(lambda m, args, out: seen.append(out))
    with pytest.warns(UserWarning, match="runs the forward hooks of a Linear module"):
        for _ in range(3):
            fast(x)
    assert len(seen) == 3


def test_a_hook_added_or_removed_after_compiling_is_followed():
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh()).eval()
    fast, x = kael.compile(model), kael.randn(2, 4)
    plain = fast(x).tolist()
    handle = model[0].register_forward_hook(lambda m, args, out: out + 100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert fast(x).tolist() == model(x).tolist() == [[1.0] * 4] * 2
    handle.remove()
    assert fast(x).tolist() == plain


def test_a_compiled_lazy_model_runs_a_plan_after_its_first_call():
    # the first forward materializes the parameters (a side effect): traced again once
    model = nn.Sequential(nn.LazyLinear(3), nn.ReLU())
    fast, x = kael.compile(model), kael.randn(2, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            assert fast(x).tolist() == model(x).tolist()
    assert fast._compiled.plan_for(x).fallback is None and fast.cache_info().traces == 2


@pytest.mark.parametrize("lib", [torch, kael], ids=["torch", "kael"])
def test_module_dict_and_parameter_dict_copy_another_of_their_kind(lib):
    modules = lib.nn.ModuleDict({"b": lib.nn.ReLU(), "a": lib.nn.Tanh()})
    params = lib.nn.ParameterDict(OrderedDict([("b", lib.ones(1)), ("a", lib.zeros(2))]))
    assert list(lib.nn.ModuleDict(modules)) == ["b", "a"]
    copied = lib.nn.ParameterDict(params)
    assert list(copied) == ["b", "a"] and copied["a"] is params["a"]
    # any other mapping's parameters enter sorted by name
    assert list(lib.nn.ParameterDict(MappingProxyType({"b": lib.ones(1), "a": lib.ones(1)}))) == [
        "a",
        "b",
    ]


@pytest.mark.parametrize("name", ["ModuleDict", "ParameterDict"])
def test_dict_update_refuses_a_malformed_pair_as_torch(name):
    value = {"ModuleDict": nn.ReLU(), "ParameterDict": kael.ones(1)}[name]
    with pytest.raises(kael.ValueError, match=f"{name} update sequence element #1 has length 1; 2"):
        getattr(nn, name)().update([("a", value), ("b",)])
    with pytest.raises(kael.TypeError, match="should be Iterable"):
        getattr(nn, name)().update([3])
    with pytest.raises(kael.TypeError, match="should be called with an iterable"):
        getattr(nn, name)().update(3)
    with pytest.raises(ValueError, match="2 is required"):
        getattr(torch.nn, name)().update([("b",)])


class StatefulLinear(nn.Linear):
    def __setstate__(self, state):  # torch's pattern for a subclass with its own state
        super().__setstate__(state)


class StatefulEncoderLayer(nn.TransformerEncoderLayer):
    def __setstate__(self, state):
        super().__setstate__(state)


def test_a_subclass_calling_super_setstate_deepcopies_and_pickles():
    layer = StatefulLinear(2, 3)
    for twin in (copy.deepcopy(layer), pickle.loads(pickle.dumps(layer))):
        assert twin.weight.tolist() == layer.weight.tolist() and twin.weight is not layer.weight
    # TransformerEncoder deep-copies its layer, so such a layer stacks
    assert len(nn.TransformerEncoder(StatefulEncoderLayer(4, 2, 8), 2).layers) == 2


def test_setstate_fills_the_tables_an_older_pickle_lacks():
    layer = nn.Linear(2, 2)
    state = {
        k: v for k, v in layer.__dict__.items() if k not in ("_forward_pre_hooks", "_forward_hooks")
    }
    old = nn.Linear.__new__(nn.Linear)
    old.__setstate__(state)
    assert old._forward_pre_hooks == {} and old._forward_hooks == {}
    assert old(kael.ones(1, 2)).tolist() == layer(kael.ones(1, 2)).tolist()


def test_load_state_dict_result_prints_as_torch():
    k, t = nn.Linear(2, 2), torch.nn.Linear(2, 2)
    assert repr(k.load_state_dict(t.state_dict())) == repr(t.load_state_dict(t.state_dict()))
    assert str(k.load_state_dict({}, strict=False)) == str(t.load_state_dict({}, strict=False))
    assert type(k.load_state_dict({}, strict=False)).__name__ == "_IncompatibleKeys"


def _names(container):
    return [type(m).__name__ for m in container]


@pytest.mark.parametrize("lib", [torch, kael], ids=["torch", "kael"])
def test_sequential_pops_adds_and_multiplies_as_torch(lib):
    seq = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh(), lib.nn.Sigmoid())
    assert type(seq.pop(1)).__name__ == "Tanh" and list(seq._modules) == ["0", "1"]
    both = seq + lib.nn.Sequential(lib.nn.Tanh())
    assert _names(both) == ["ReLU", "Sigmoid", "Tanh"] and len(seq) == 2
    twice = seq * 2
    assert _names(twice) == ["ReLU", "Sigmoid"] * 2 and twice[2] is seq[0]
    assert _names(2 * seq) == _names(twice)
    seq += lib.nn.Sequential(lib.nn.ELU())
    seq *= 2
    assert _names(seq) == ["ReLU", "Sigmoid", "ELU"] * 2 and list(seq._modules)[-1] == "5"
    with pytest.raises(ValueError, match="supports only objects of Sequential class"):
        seq + [lib.nn.ReLU()]
    with pytest.raises(ValueError, match="Non-positive multiplication factor 0"):
        seq * 0
    with pytest.raises(TypeError, match="unsupported operand"):
        seq * 1.5


@pytest.mark.parametrize("lib", [torch, kael], ids=["torch", "kael"])
def test_module_and_parameter_lists_pop_and_add_as_torch(lib):
    modules = lib.nn.ModuleList([lib.nn.ReLU(), lib.nn.Tanh()])
    both = modules + [lib.nn.ELU()]
    assert type(both) is lib.nn.ModuleList and _names(both) == ["ReLU", "Tanh", "ELU"]
    assert type(modules.pop(0)).__name__ == "ReLU" and _names(modules) == ["Tanh"]
    params = lib.nn.ParameterList([lib.ones(1)])
    params += [lib.zeros(2)]
    assert [tuple(p.shape) for p in params] == [(1,), (2,)]


@pytest.mark.parametrize("lib", [torch, kael], ids=["torch", "kael"])
def test_parameter_dict_gets_sets_defaults_and_merges_as_torch(lib):
    params = lib.nn.ParameterDict({"a": lib.ones(1)})
    assert params.get("a") is params["a"] and params.get("b") is None and params.get("b", 3) == 3
    made = params.setdefault("b", lib.zeros(2))
    assert made is params["b"] and params.setdefault("b", lib.ones(5)) is made
    merged = params | lib.nn.ParameterDict({"c": lib.ones(3)})
    assert list(merged) == ["a", "b", "c"] and list(params) == ["a", "b"]
    assert merged["a"] is params["a"]
    params |= {"d": lib.ones(4)}
    assert list(params) == ["a", "b", "d"]


def test_container_subclasses_slice_and_print_under_their_own_class():
    class KStack(nn.Sequential):
        pass

    class TStack(torch.nn.Sequential):
        pass

    assert type(KStack(nn.ReLU(), nn.Tanh())[:1]) is KStack
    assert type(TStack(torch.nn.ReLU(), torch.nn.Tanh())[:1]) is TStack

    class Blocks(nn.ModuleList):
        pass

    class TorchBlocks(torch.nn.ModuleList):
        pass

    assert repr(Blocks([nn.ReLU()])) == repr(TorchBlocks([torch.nn.ReLU()])).replace("Torch", "")
    assert repr(Blocks()) == "Blocks()"


def test_parameter_containers_indent_and_name_their_entries_as_torch():
    """ParameterList shows each dtype, ParameterDict each torch.typename (kael.FloatTensor)."""
    k_list = nn.ParameterList([kael.ones(2), kael.ones(3, 2, dtype=kael.float64)])
    t_list = torch.nn.ParameterList([torch.ones(2), torch.ones(3, 2, dtype=torch.float64)])
    assert repr(k_list) == repr(t_list).replace("torch.", "kael.")
    k_dict = nn.ParameterDict({"a": kael.ones(2), "b": kael.ones(1, dtype=kael.float64)})
    t_dict = torch.nn.ParameterDict({"a": torch.ones(2), "b": torch.ones(1, dtype=torch.float64)})
    assert repr(k_dict) == repr(t_dict).replace("torch.", "kael.")
    assert "[kael.DoubleTensor of size 1]" in repr(k_dict)
    one = repr(nn.ParameterList([kael.ones(2)]))
    assert one == repr(torch.nn.ParameterList([torch.ones(2)])).replace("torch.", "kael.")


def test_compiling_a_module_gives_a_module_as_torch():
    """kael.compile(model) was a plain function object: .eval(), .state_dict() and
    isinstance(..., nn.Module) failed where torch.compile's OptimizedModule has them."""
    layers = [(4, 3), (3, 2)]
    theirs = torch.nn.Sequential(*(torch.nn.Linear(*s) for s in layers))
    model = nn.Sequential(*(nn.Linear(*s) for s in layers))
    model.load_state_dict(theirs.state_dict())
    validating = torch.distributions.Distribution._validate_args
    fast, reference = kael.compile(model, mode="reduce-overhead"), torch.compile(theirs)
    # torch.compile turns torch.distributions' argument validation off for the process
    torch.distributions.Distribution.set_default_validate_args(validating)
    assert isinstance(fast, nn.Module) and repr(fast) == repr(reference)
    assert list(fast.state_dict()) == list(reference.state_dict())
    fast.eval()
    assert not model.training and fast._orig_mod is model and fast.training is False
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(fast(kael.tensor(x)).numpy(), model(kael.tensor(x)).numpy())


def test_module_compile_compiles_in_place():
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5)).eval()
    x = kael.randn(4, 3)
    expected = model(x)
    model.compile()
    assert kael.equal(model(x), expected) and model.forward.cache_info().traces == 1
    model.train()  # the compiled forward follows the mode, as the plain one does
    assert (model(x) == 0).any().item()


def test_compile_takes_torchs_arguments():
    model = nn.Linear(2, 2)
    assert kael.compile(model, disable=True) is model
    kael.compile(model, backend="inductor", options={"x": 1}, dynamic=True, recompile_limit=3)
    with pytest.raises(kael.ValueError, match="Unknown mode='fast'"):
        kael.compile(model, mode="fast")


def test_data_parallel_keeps_torchs_checkpoint_keys():
    theirs = torch.nn.DataParallel(torch.nn.Linear(2, 2))
    ours = nn.DataParallel(nn.Linear(2, 2))
    assert list(ours.state_dict()) == list(theirs.state_dict()) and repr(ours) == repr(theirs)
    ours.load_state_dict(theirs.state_dict())
    want = theirs(torch.ones(1, 2)).detach().numpy()
    np.testing.assert_allclose(ours(kael.ones(1, 2)).numpy(), want, rtol=1e-6)


def test_compiled_modules_copy_and_pickle():
    """EMA copies and best-model saves deepcopy a compiled model: it raised TypeError."""
    x = kael.ones(1, 2)
    fast = kael.compile(nn.Linear(2, 2))
    fast(x)
    in_place = nn.Linear(2, 2)
    in_place.compile()
    in_place(x)
    for model in (fast, in_place):
        for twin in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
            assert type(twin) is type(model) and kael.equal(twin(x), model(x))


def test_compiled_module_sets_attributes_on_the_original_as_torch():
    model = nn.Sequential(nn.Dropout(0.5))
    fast = kael.compile(model)
    fast.training = False
    assert model.training is False
    layer = nn.Linear(2, 2)
    fast = kael.compile(layer)
    fast.weight = nn.Parameter(kael.zeros(2, 2))
    fast.note = 5
    assert layer.weight.sum().item() == 0 and layer.note == 5


@pytest.mark.parametrize("lib", [torch, kael], ids=["torch", "kael"])
def test_a_compiled_modules_training_is_the_originals_as_torch(lib):
    model = lib.nn.Linear(2, 2).eval()
    fast = lib.compile(model)
    assert fast.training is False  # not the wrapper's own default
    fast.train()
    assert model.training is True and fast.training is True
    model.eval()
    assert fast.training is False
    assert fast.eval() is fast and model.training is False


# ---- state-dict protocol: extra state, _load_from_state_dict, hooks ---------------------------

LIBS = pytest.mark.parametrize("lib", [torch, kael], ids=["torch", "kael"])
RUNTIME = {torch: RuntimeError, kael: kael.Error}  # what each raises where torch's is RuntimeError


def _configured(lib):
    class Configured(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)
            self.cfg = {"mode": "a"}

        def get_extra_state(self):
            return self.cfg

        def set_extra_state(self, state):
            self.cfg = state

    return Configured()


@LIBS
def test_extra_state_is_saved_first_and_loaded_back_as_torch(lib):
    source, target = _configured(lib), _configured(lib)
    source.cfg = {"mode": "b"}
    state = source.state_dict()
    assert list(state) == ["_extra_state", "lin.weight", "lin.bias"]
    assert repr(target.load_state_dict(state)) == "<All keys matched successfully>"
    assert target.cfg == {"mode": "b"}
    nested = lib.nn.Sequential(_configured(lib))
    assert "0._extra_state" in nested.state_dict()
    without = {k: v for k, v in state.items() if k != "_extra_state"}
    with pytest.raises(RUNTIME[lib], match=r'Missing key\(s\) in state_dict: "_extra_state"'):
        _configured(lib).load_state_dict(without)
    plain = lib.nn.Linear(2, 2)
    result = plain.load_state_dict(dict(plain.state_dict(), _extra_state=1), strict=False)
    assert result.unexpected_keys == ["_extra_state"]


def test_a_torch_checkpoint_extra_state_loads_into_kael():
    theirs = _configured(torch)
    theirs.cfg = {"mode": "torch"}
    ours = _configured(kael)
    assert repr(ours.load_state_dict(theirs.state_dict())) == "<All keys matched successfully>"
    assert ours.cfg == {"mode": "torch"}
    same(ours.lin.weight, theirs.lin.weight.detach())


def test_the_base_extra_state_methods_refuse_to_run():
    with pytest.raises(kael.Error, match="get_extra_state"):
        nn.Linear(1, 1).get_extra_state()
    with pytest.raises(kael.Error, match="set_extra_state"):
        nn.Linear(1, 1).set_extra_state(1)


def _renaming(lib):
    class Renaming(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)

        def _load_from_state_dict(self, state_dict, prefix, *rest):
            for key in list(state_dict):
                if key.startswith(prefix + "old."):
                    state_dict[prefix + "lin." + key[len(prefix) + 4 :]] = state_dict.pop(key)
            super()._load_from_state_dict(state_dict, prefix, *rest)

    return Renaming()


@LIBS
def test_a_load_from_state_dict_override_upgrades_old_keys_as_torch(lib):
    model = lib.nn.Sequential(_renaming(lib))
    given = {"0.old.weight": lib.full((2, 2), 3.0), "0.old.bias": lib.ones(2)}
    assert repr(model.load_state_dict(given)) == "<All keys matched successfully>"
    assert model[0].lin.weight.sum().item() == 12.0
    assert list(given) == ["0.old.weight", "0.old.bias"]  # the caller's dict is left alone


def _hook_log(lib):
    """A two-level model whose every state-dict hook appends (hook, module, prefix) to log."""
    log = []
    outer = lib.nn.Sequential(lib.nn.Linear(2, 2))
    for name, module in (("outer", outer), ("inner", outer[0])):
        module.register_state_dict_pre_hook(
            lambda m, prefix, keep, n=name: log.append(("sd_pre", n, prefix, keep))
        )
        module.register_state_dict_post_hook(
            lambda m, sd, prefix, meta, n=name: log.append(("sd_post", n, prefix, len(sd), meta))
        )
        module.register_load_state_dict_pre_hook(
            lambda m, sd, prefix, meta, strict, *lists, n=name: log.append(
                ("load_pre", n, prefix, sorted(sd), strict)
            )
        )
        module._register_load_state_dict_pre_hook(
            lambda sd, prefix, *rest, n=name: log.append(("private_pre", n, prefix))
        )
        module.register_load_state_dict_post_hook(
            lambda m, keys, n=name: log.append(("load_post", n, list(keys.missing_keys)))
        )
    return outer, log


@LIBS
def test_state_dict_and_load_hooks_run_in_torch_order_with_torch_arguments(lib):
    outer, log = _hook_log(lib)
    state = outer.state_dict(keep_vars=True)
    outer.load_state_dict({"0.weight": state["0.weight"]}, strict=False)
    assert log == [
        ("sd_pre", "outer", "", True),
        ("sd_pre", "inner", "0.", True),
        ("sd_post", "inner", "0.", 2, {"version": 1}),
        ("sd_post", "outer", "", 2, {"version": 1}),
        ("load_pre", "outer", "", ["0.weight"], True),
        ("private_pre", "outer", ""),
        ("load_pre", "inner", "0.", ["0.weight"], True),
        ("private_pre", "inner", "0."),
        ("load_post", "inner", ["0.bias"]),
        ("load_post", "outer", ["0.bias"]),
    ]


@LIBS
def test_hook_handles_remove_state_dict_hooks(lib):
    layer, log = lib.nn.Linear(2, 2), []
    handles = [
        layer.register_state_dict_pre_hook(lambda *a: log.append("pre")),
        layer.register_state_dict_post_hook(lambda *a: log.append("post")),
        layer.register_load_state_dict_pre_hook(lambda *a: log.append("load_pre")),
        layer.register_load_state_dict_post_hook(lambda *a: log.append("load_post")),
    ]
    layer.load_state_dict(layer.state_dict())
    assert log == ["pre", "post", "load_pre", "load_post"]
    for handle in handles:
        handle.remove()
    layer.load_state_dict(layer.state_dict())
    assert len(log) == 4


@LIBS
def test_state_dict_metadata_records_each_module_version(lib):
    state = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU()).state_dict()
    assert dict(state._metadata) == {"": {"version": 1}, "0": {"version": 1}, "1": {"version": 1}}
    assert dict(lib.nn.BatchNorm1d(2).state_dict()._metadata) == {"": {"version": 2}}


@LIBS
def test_a_version_2_batch_norm_state_dict_must_carry_num_batches_tracked(lib):
    """Only a checkpoint older than version 2 (or without metadata) gets it filled in."""
    state = lib.nn.BatchNorm1d(3).state_dict()
    del state["num_batches_tracked"]
    with pytest.raises(RuntimeError, match='Missing key.*"num_batches_tracked"'):
        lib.nn.BatchNorm1d(3).load_state_dict(state)
    assert tuple(lib.nn.BatchNorm1d(3).load_state_dict(dict(state))) == ([], [])


@LIBS
def test_a_load_post_hook_may_clear_the_keys_but_not_return_new_ones(lib):
    layer = lib.nn.Linear(2, 2)
    layer.register_load_state_dict_post_hook(lambda m, keys: keys.missing_keys.clear())
    assert repr(layer.load_state_dict({})) == "<All keys matched successfully>"
    layer.register_load_state_dict_post_hook(lambda m, keys: keys)
    with pytest.raises((AssertionError, kael.Error), match="not expected to return new values"):
        layer.load_state_dict(layer.state_dict())


@LIBS
def test_state_dict_post_hooks_public_must_return_none_private_may_replace(lib):
    layer = lib.nn.Linear(2, 2)
    layer._register_state_dict_hook(lambda m, sd, prefix, meta: {"replaced": 1})
    assert layer.state_dict() == {"replaced": 1}
    assert list(lib.nn.Sequential(layer).state_dict()) == ["0.weight", "0.bias"]  # root only

    def public(m, sd, prefix, meta):
        return sd

    other = lib.nn.Linear(2, 2)
    other.register_state_dict_post_hook(public)
    with pytest.raises(RUNTIME[lib], match="state_dict post-hook must return None"):
        other.state_dict()
    with pytest.raises(RUNTIME[lib], match="Cannot register the same function"):
        other._register_state_dict_hook(public)


@pytest.mark.parametrize(
    "extra", [["0"], ["0.weight.extra"], ["1.weight"], ["0.nb"], ["0", "0.weight.extra", "x"]]
)
def test_strict_loading_reports_every_unexpected_key_as_torch(extra):
    """A dotted key must name a child, a bare one a parameter or persistent buffer."""
    found = []
    for lib in (torch, kael):
        model = lib.nn.Sequential(lib.nn.Linear(2, 3))
        model[0].register_buffer("nb", lib.zeros(1), persistent=False)
        state = dict(model.state_dict(), **{key: lib.ones(1) for key in extra})
        result = model.load_state_dict(state, strict=False)
        with pytest.raises(RUNTIME[lib], match=r"Unexpected key\(s\) in state_dict: ") as error:
            model.load_state_dict(state)
        found.append((sorted(result.unexpected_keys), result.missing_keys, str(error.value)))
    assert found[0] == found[1] and found[1][:2] == (sorted(extra), [])


@LIBS
@pytest.mark.parametrize("requires_grad", [True, False])
def test_assign_keeps_requires_grad_and_a_given_parameter_as_torch(lib, requires_grad):
    layer = lib.nn.Linear(2, 2)
    layer.weight.requires_grad_(requires_grad)
    given = lib.nn.Parameter(lib.ones(2, 2), requires_grad=not requires_grad)
    layer.load_state_dict({"weight": given, "bias": lib.zeros(2)}, assign=True)
    assert layer.weight is given and given.requires_grad is requires_grad
    assert isinstance(layer.bias, lib.nn.Parameter) and layer.bias.requires_grad
    frozen = lib.nn.Linear(2, 2).requires_grad_(False)
    frozen.load_state_dict({"weight": lib.ones(2, 2), "bias": lib.zeros(2)}, assign=True)
    assert isinstance(frozen.weight, lib.nn.Parameter) and not frozen.weight.requires_grad


def test_assign_reports_a_parameter_that_cannot_take_the_value():
    layer = nn.Linear(2, 2)
    with pytest.raises(kael.Error, match='While copying the parameter named "weight", whose'):
        layer.load_state_dict(
            {"weight": kael.ones(2, 2, dtype=kael.int64), "bias": kael.zeros(2)}, assign=True
        )


# ---- conversions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layer", "fmt"),
    [("Conv2d", "channels_last"), ("Conv3d", "channels_last_3d"), ("Conv1d", "channels_last"),
     ("Conv2d", "contiguous_format"), ("Conv3d", "preserve_format")],
)  # fmt: skip
def test_to_memory_format_lays_out_4d_and_5d_state_as_torch(layer, fmt):
    theirs = getattr(torch.nn, layer)(3, 4, 3).to(memory_format=getattr(torch, fmt))
    ours = getattr(nn, layer)(3, 4, 3)
    weight = ours.weight
    assert ours.to(kael.float64, memory_format=getattr(kael, fmt)) is ours
    assert ours.weight is weight and ours.weight.dtype is kael.float64
    assert ours.weight.stride() == theirs.weight.stride()
    assert ours.bias.stride() == theirs.bias.stride()


@pytest.mark.parametrize(("layer", "fmt", "rank"), [("Conv3d", "channels_last", 4),
                                                    ("Conv2d", "channels_last_3d", 5)])  # fmt: skip
def test_to_memory_format_refuses_a_format_of_another_rank_as_torch(layer, fmt, rank):
    message = f"required rank {rank} tensor to use {fmt} format"
    with pytest.raises(RuntimeError, match=message):
        getattr(torch.nn, layer)(3, 4, 3).to(memory_format=getattr(torch, fmt))
    with pytest.raises(kael.ValueError, match=message):
        getattr(nn, layer)(3, 4, 3).to(memory_format=getattr(kael, fmt))


def test_to_memory_format_must_be_a_memory_format():
    with pytest.raises(kael.TypeError, match="argument 'memory_format' must be kael.memory_format"):
        nn.Linear(2, 2).to(memory_format=kael.float32)


@LIBS
@pytest.mark.parametrize("dst", ["float64", "DoubleTensor", "'DoubleTensor'"])
def test_type_converts_every_parameter_and_buffer_as_torch(lib, dst):
    target = f"{lib.__name__}.DoubleTensor" if dst.startswith("'") else getattr(lib, dst.strip("'"))
    norm = lib.nn.BatchNorm1d(2)
    weight = norm.weight
    assert norm.type(target) is norm and norm.weight is weight
    assert [str(t.dtype).split(".")[-1] for t in norm.state_dict().values()] == ["float64"] * 5


@LIBS
def test_type_to_an_integer_dtype_is_refused_while_parameters_require_grad(lib):
    with pytest.raises(RUNTIME[lib], match="data set to a tensor that requires gradients"):
        lib.nn.Linear(2, 2).type(lib.int64)
    frozen = lib.nn.Linear(2, 2).requires_grad_(False).type(lib.int64)
    assert str(frozen.weight.dtype).endswith("int64") and isinstance(
        frozen.weight, lib.nn.Parameter
    )


@LIBS
@pytest.mark.parametrize("recurse", [True, False])
def test_to_empty_keeps_shapes_dtypes_and_parameters(lib, recurse):
    model = lib.nn.Sequential(lib.nn.Linear(2, 3))
    model.register_buffer("steps", lib.arange(4))
    inner_weight, steps = model[0].weight, model.steps
    assert model.to_empty(device="cpu", recurse=recurse) is model
    assert model[0].weight is inner_weight and tuple(model[0].weight.shape) == (3, 2)
    assert model.steps is not steps and str(model.steps.dtype).endswith("int64")
    with pytest.raises(TypeError):
        model.to_empty()  # device is required, by keyword


def test_to_empty_gives_new_elements_only_where_it_recurses():
    for recurse, moved in ((True, True), (False, False)):
        model = nn.Sequential(nn.Linear(2, 3))
        before = model[0].weight.data_ptr()
        model.to_empty(device="cpu", recurse=recurse)
        assert (model[0].weight.data_ptr() != before) is moved


@LIBS
def test_share_memory_moves_the_state_into_shared_memory(lib):
    model = lib.nn.Sequential(lib.nn.BatchNorm1d(2))
    weight = model[0].weight
    assert model.share_memory() is model and model[0].weight is weight
    assert all(t.is_shared() for t in model.state_dict().values())


@LIBS
def test_get_name_is_the_class_name(lib):
    assert lib.nn.Linear(1, 1)._get_name() == "Linear"
    assert lib.nn.Sequential()._get_name() == "Sequential"


# ---- submodules by path -------------------------------------------------------------------------


@LIBS
def test_set_submodule_replaces_or_adds_under_an_existing_parent_as_torch(lib):
    model = lib.nn.Sequential(lib.nn.Sequential(lib.nn.ReLU()))
    model.set_submodule("0.0", lib.nn.Tanh())
    model.set_submodule("0.extra", lib.nn.Sigmoid())
    model.set_submodule("0.0", lib.nn.ELU(), strict=True)
    assert [type(m).__name__ for m in model[0]] == ["ELU", "Sigmoid"]
    with pytest.raises(AttributeError, match="Sequential has no attribute `nope`"):
        model.set_submodule("0.nope", lib.nn.ReLU(), strict=True)
    with pytest.raises(AttributeError, match="Sequential has no attribute `x`"):
        model.set_submodule("x.y", lib.nn.ReLU())
    with pytest.raises(ValueError, match="Cannot set the submodule without a target name!"):
        model.set_submodule("", lib.nn.ReLU())
    with pytest.raises(ValueError, match="`module` is not an nn.Module, found <class 'int'>"):
        model.set_submodule("0.0", 3)
    linear = lib.nn.Sequential(lib.nn.Linear(1, 1))
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        linear.set_submodule("0.weight", lib.nn.ReLU())


@LIBS
@pytest.mark.parametrize(
    ("call", "target", "message"),
    [("get_submodule", "0.weight", "`weight` is not an nn.Module"),
     ("get_submodule", "0.foo", "Linear has no attribute `foo`"),
     ("get_parameter", "0.foo", "Linear has no attribute `foo`"),
     ("get_parameter", "0", "`0` is not an nn.Parameter"),
     ("get_buffer", "0.weight", "`weight` is not a buffer")],
)  # fmt: skip
def test_path_lookups_refuse_as_torch(lib, call, target, message):
    model = lib.nn.Sequential(lib.nn.Linear(1, 1))
    with pytest.raises(AttributeError, match=message):
        getattr(model, call)(target)


# ---- forward hooks ------------------------------------------------------------------------------


class Failing:
    """A module body (for both libraries) whose forward raises."""

    @staticmethod
    def forward(self, x, **kwargs):
        raise ValueError("forward failed")


@LIBS
def test_an_always_call_forward_hook_runs_when_forward_raises(lib):
    layer = type("Broken", (lib.nn.Module,), {"forward": Failing.forward})()
    seen = []
    layer.register_forward_hook(lambda m, args, out: seen.append(("plain", out)))
    layer.register_forward_hook(lambda m, args, out: seen.append(("always", out)), always_call=True)
    layer.register_forward_hook(
        lambda m, args, kw, out: seen.append(("kwargs", kw, out)), with_kwargs=True,
        always_call=True,
    )  # fmt: skip
    with pytest.raises(ValueError, match="forward failed"):
        layer(1, flag=True)
    assert seen == [("always", None), ("kwargs", {"flag": True}, None)]


@LIBS
def test_an_always_call_hook_runs_once_when_a_later_hook_raises(lib):
    layer, seen = lib.nn.Identity(), []
    layer.register_forward_hook(lambda m, a, out: seen.append("always"), always_call=True)
    layer.register_forward_hook(lambda m, a, out: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        layer(lib.ones(1))
    assert seen == ["always"]


@LIBS
def test_a_raising_always_call_hook_is_silenced_with_a_warning(lib):
    layer = type("Broken", (lib.nn.Module,), {"forward": Failing.forward})()
    layer.register_forward_hook(lambda m, a, out: 1 / 0, always_call=True)
    warned = pytest.warns(UserWarning, match="``always_call=True`` raised an exception that was")
    with warned, pytest.raises(ValueError, match="forward failed"):
        layer(1)


@LIBS
def test_always_call_handles_remove_the_hook(lib):
    layer = type("Broken", (lib.nn.Module,), {"forward": Failing.forward})()
    seen = []
    handle = layer.register_forward_hook(lambda *a: seen.append(1), always_call=True)
    handle.remove()
    with pytest.raises(ValueError):
        layer(1)
    assert seen == []


@LIBS
def test_a_kwargs_pre_hook_returning_something_else_is_refused_as_torch(lib):
    layer = lib.nn.Identity()
    layer.register_forward_pre_hook(lambda m, a, kw: 5, with_kwargs=True)
    with pytest.raises(RUNTIME[lib], match=r"must return None or a tuple of \(new_args, new_kw"):
        layer(lib.ones(1))


# ---- repr ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("extra", ["k=1\n\nj=2", "k=1\n\n", "\n", "one", ""])
@pytest.mark.parametrize("children", [False, True])
@pytest.mark.parametrize("container", ["Sequential", "ModuleList"])
def test_extra_repr_lines_blank_ones_included_print_as_torch(extra, children, container):
    """Module's repr leaves a blank line empty when nesting; ModuleList's indents it."""

    def build(lib):
        class Settings(lib.nn.Module):
            def extra_repr(self):
                return extra

        module = Settings()
        if children:
            module.a = lib.nn.ReLU()
        outer = getattr(lib.nn, container)
        return module, outer([module]) if container == "ModuleList" else outer(module)

    (k, k_outer), (t, t_outer) = build(kael), build(torch)
    assert repr(k) == repr(t)
    assert repr(k_outer) == repr(t_outer)
