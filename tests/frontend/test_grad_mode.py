"""Gradient-mode switches as PyTorch has them (no autograd yet: they keep the flag only)."""

import threading

import pytest
import torch

import kael


@pytest.mark.parametrize(
    ("name", "args", "inside"),
    [
        ("no_grad", (), False),
        ("enable_grad", (), True),
        ("inference_mode", (), False),
        ("set_grad_enabled", (False,), False),
        ("set_grad_enabled", (True,), True),
    ],
)
def test_switches_set_and_restore_the_flag_as_torch(name, args, inside):
    for lib in (kael, torch):
        assert lib.is_grad_enabled()
        with getattr(lib, name)(*args):
            assert lib.is_grad_enabled() is inside
        assert lib.is_grad_enabled()


def test_enable_grad_inside_no_grad_and_nesting_restore_each_level():
    with kael.no_grad():
        with kael.enable_grad():
            assert kael.is_grad_enabled()
        assert not kael.is_grad_enabled()
    assert kael.is_grad_enabled()


def test_inference_mode_marks_inference_and_false_leaves_grad_alone():
    with kael.inference_mode():
        assert kael.is_inference_mode_enabled() and not kael.is_grad_enabled()
        with kael.inference_mode(False):
            assert not kael.is_inference_mode_enabled()
    assert not kael.is_inference_mode_enabled() and kael.is_grad_enabled()


def test_set_grad_enabled_acts_when_called_as_torch():
    for lib in (kael, torch):
        lib.set_grad_enabled(False)
        assert not lib.is_grad_enabled()
        lib.set_grad_enabled(True)
        assert lib.is_grad_enabled()


def test_switches_decorate_functions_and_generators():
    @kael.no_grad()
    def f(x):
        return kael.is_grad_enabled(), x * 2

    @kael.inference_mode()
    def gen():
        yield kael.is_grad_enabled()
        yield kael.is_inference_mode_enabled()

    assert f(kael.ones(2))[0] is False
    assert kael.is_grad_enabled()
    steps = gen()
    assert next(steps) is False
    assert kael.is_grad_enabled()  # between steps the caller's setting holds
    assert next(steps) is True


@pytest.mark.parametrize(
    ("name", "flag", "inside"),
    [
        ("no_grad", "is_grad_enabled", False),
        ("enable_grad", "is_grad_enabled", True),
        ("inference_mode", "is_inference_mode_enabled", True),
    ],
)
def test_switches_decorate_without_parentheses_as_torch(name, flag, inside):
    for lib in (torch, kael):
        check = getattr(lib, flag)

        @getattr(lib, name)
        def f(x, check=check):
            return check(), x

        assert f(3) == (inside, 3) and f.__name__ == "f"
        assert check() is (flag == "is_grad_enabled")  # outside: the caller's setting


def test_the_flag_is_per_thread():
    seen = []
    with kael.no_grad():
        worker = threading.Thread(target=lambda: seen.append(kael.is_grad_enabled()))
        worker.start()
        worker.join()
    assert seen == [True]


def test_ops_under_no_grad_give_the_same_values():
    x = kael.arange(6.0)
    with kael.no_grad():
        assert (x * 2 + 1).tolist() == [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]


def test_tensors_never_require_grad():
    x = kael.ones(3)
    assert x.requires_grad is False and x.grad is None and x.is_leaf
    assert x.requires_grad_(False) is x
    with pytest.raises(kael.Error, match="no autograd yet"):
        x.requires_grad_()


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_switch_modes_must_be_bools(bad):
    with pytest.raises(kael.TypeError, match="must be a bool"):
        kael.set_grad_enabled(bad)
    with pytest.raises(kael.TypeError, match="must be a bool"):
        kael.inference_mode(bad)


def test_a_decorated_generator_runs_out_and_returns_as_torch():
    for lib in (torch, kael):

        @lib.no_grad()
        def counted():
            yield 1
            return "done"

        @lib.inference_mode
        def empty():
            return
            yield

        steps = counted()
        assert next(steps) == 1
        with pytest.raises(StopIteration) as stop:
            next(steps)
        assert stop.value.value == "done" and list(empty()) == []


def test_inference_mode_false_turns_gradients_on_as_torch():
    for lib in (torch, kael):
        for outer in (lib.no_grad, lib.inference_mode):
            with outer(), lib.inference_mode(False):
                assert lib.is_grad_enabled() and not lib.is_inference_mode_enabled()


def test_switches_take_the_function_by_keyword_and_none_as_torch():
    for lib in (torch, kael):
        assert lib.no_grad(orig_func=lambda lib=lib: lib.is_grad_enabled())() is False
        assert isinstance(lib.enable_grad(None), lib.enable_grad)
