"""kael.random: torch.random's names for the default generator, and fork_rng."""

import pytest

import kael


def test_names_are_the_default_generators():
    assert kael.random.manual_seed is kael.manual_seed
    assert kael.random.default_generator is kael.default_generator
    kael.random.manual_seed(5)
    assert kael.random.initial_seed() == 5


def test_fork_rng_restores_the_stream_on_exit():
    kael.manual_seed(1)
    with kael.random.fork_rng():
        inside = kael.rand(4)
    assert kael.equal(kael.rand(4), inside)


def test_fork_rng_restores_after_an_exception():
    kael.manual_seed(2)
    expected = kael.rand(3)
    kael.manual_seed(2)
    with pytest.raises(RuntimeError), kael.random.fork_rng(devices=[]):
        kael.rand(5)
        raise RuntimeError("inside")
    assert kael.equal(kael.rand(3), expected)


def test_fork_rng_disabled_lets_the_stream_move():
    kael.manual_seed(3)
    with kael.random.fork_rng(enabled=False):
        inside = kael.rand(4)
    assert not kael.equal(kael.rand(4), inside)
