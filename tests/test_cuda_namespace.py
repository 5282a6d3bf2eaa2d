"""kael.cuda's device queries, memory counters and seeding, as torch.cuda spells them: on
a machine without a GPU they answer as torch's do there (0, nothing, or a kael.Error where
torch raises); the `gpu` tests check the device side (the emulator in the suite)."""

import pytest

import kael

cuda = kael.cuda


def test_namespace_holds_only_the_public_names():
    public = {n for n in dir(cuda) if not n.startswith("_")} - {"annotations"}
    assert public == set(cuda.__all__)


def test_queries_answer_as_torch_without_a_gpu():
    available = cuda.is_available()
    assert cuda.device_count() == int(available) and cuda.is_initialized() == available
    if available:
        return  # the gpu tests below cover this side
    assert cuda.memory_allocated() == 0 and cuda.memory_reserved() == 0
    assert cuda.memory_allocated("cuda:0") == 0
    cuda.empty_cache()
    for call in (cuda.current_device, cuda.get_device_name, cuda.initial_seed):
        with pytest.raises(kael.Error, match="CUDA is not available"):
            call()


def test_seeding_the_gpu_without_one_leaves_the_cpu_stream_alone():
    if cuda.is_available():
        return  # with a GPU it reseeds the one generator: test_gpu_seeding_reseeds_draws
    kael.manual_seed(7)
    first = kael.rand(4)
    kael.manual_seed(7)
    cuda.manual_seed_all(123)
    cuda.manual_seed(123)
    cuda.seed_all()
    assert kael.equal(kael.rand(4), first)


@pytest.mark.gpu
def test_gpu_device_queries():
    assert cuda.device_count() == 1 and cuda.current_device() == 0
    props = cuda.get_device_properties(0)
    assert cuda.get_device_name() == props.name and props.total_memory > 0
    assert cuda.get_device_capability("cuda:0") == (props.major, props.minor) >= (7, 0)
    assert "multi_processor_count" in repr(props)


@pytest.mark.gpu
@pytest.mark.parametrize("device", [None, 0, "cuda", "cuda:0"])
def test_gpu_set_device_takes_device_zero(device):
    cuda.set_device(device if device is not None else 0)
    assert cuda.current_device() == 0


@pytest.mark.gpu
@pytest.mark.parametrize("device", [1, "cuda:1", "cpu"])
def test_gpu_set_device_refuses_another_device(device):
    with pytest.raises(kael.ValueError, match="kael drives one GPU, cuda:0; got device"):
        cuda.set_device(device)


@pytest.mark.gpu
def test_gpu_memory_counters_follow_tensors():
    cuda.empty_cache()
    before = cuda.memory_allocated()
    x = kael.ones(1 << 20, device="cuda")
    assert cuda.memory_allocated() >= before + x.numel() * 4
    assert cuda.memory_reserved() >= cuda.memory_allocated()
    del x
    cuda.empty_cache()
    assert cuda.memory_allocated() == before


@pytest.mark.gpu
def test_gpu_seeding_reseeds_draws():
    cuda.manual_seed_all(3)
    first = kael.rand(8, device="cuda")
    cuda.manual_seed(3)
    assert kael.equal(kael.rand(8, device="cuda"), first) and cuda.initial_seed() == 3


def test_device_arguments_are_checked_with_or_without_a_gpu():
    with pytest.raises(kael.ValueError, match="kael drives one GPU, cuda:0; got device 1"):
        cuda.memory_allocated(1)
    with pytest.raises(kael.ValueError, match="with a specified index or an integer"):
        cuda.set_device(None)
    cuda.set_device(-1)  # torch's no-op
    with pytest.raises(kael.TypeError, match="seed must be an int"):
        cuda.manual_seed("a")
