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
    assert cuda.max_memory_allocated() == 0 and cuda.max_memory_reserved("cuda") == 0
    assert cuda.memory_stats() == {} and "no GPU" in cuda.memory_summary()
    assert cuda.is_bf16_supported() is False
    cuda.reset_peak_memory_stats()
    cuda.empty_cache()
    calls = (cuda.current_device, cuda.get_device_name, cuda.initial_seed, cuda.mem_get_info)
    for call in (*calls, cuda.get_rng_state, lambda: cuda.device(0)):
        with pytest.raises(kael.Error, match="CUDA is not available"):
            call()
    with cuda.device(None), cuda.device(-1):  # torch's no-ops
        pass


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
def test_gpu_peak_counters_hold_the_most_in_use_until_reset():
    cuda.empty_cache()
    cuda.reset_peak_memory_stats()
    base = cuda.memory_allocated()
    assert cuda.max_memory_allocated() == base
    x = kael.ones(1 << 18, device="cuda")
    peak = cuda.max_memory_allocated()
    assert peak >= base + x.numel() * 4 and cuda.max_memory_reserved() >= cuda.memory_reserved()
    del x
    assert cuda.memory_allocated() == base < peak == cuda.max_memory_allocated()
    cuda.reset_peak_memory_stats("cuda:0")
    assert cuda.max_memory_allocated() == base
    stats = cuda.memory_stats()
    assert kael.memory_stats("cuda").items() <= stats.items() and stats["peak_in_use_bytes"] == base
    assert stats["allocated_bytes.all.peak"] == base == stats["allocated_bytes.all.current"]
    assert stats["reserved_bytes.all.peak"] >= stats["reserved_bytes.all.current"] > 0
    assert "peak_reserved_bytes" in cuda.memory_summary()


@pytest.mark.gpu
def test_gpu_mem_get_info_is_free_then_total():
    free, total = cuda.mem_get_info()
    assert 0 < free <= total == cuda.get_device_properties().total_memory


@pytest.mark.gpu
def test_gpu_rng_state_round_trips_the_draws():
    state = cuda.get_rng_state()
    first = kael.rand(8, device="cuda")
    cuda.set_rng_state(state)
    assert kael.equal(kael.rand(8, device="cuda"), first)
    cuda.set_rng_state_all(cuda.get_rng_state_all())
    with pytest.raises(kael.ValueError, match="expected 1 state"):
        cuda.set_rng_state_all([state, state])


@pytest.mark.gpu
def test_gpu_device_context_takes_device_zero():
    assert cuda.is_bf16_supported()
    with cuda.device("cuda:0"), cuda.device(0):
        assert cuda.current_device() == 0
    with pytest.raises(
        kael.ValueError, match="device\\(\\): kael drives one GPU, cuda:0; got device 1"
    ):
        cuda.device(1)


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
