"""runtime/user_warning.py: kael's warnings name the user's line, whatever path an op takes."""

import warnings

import numpy as np

import kael
from kael.runtime import user_warning


def _caught(fn) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    assert caught, "no warning"
    return caught


def test_warnings_of_ops_through_any_door_point_at_the_callers_line():
    x = kael.arange(6.0).reshape(2, 3)
    calls = {
        "uint8 mask, the general plan": lambda: x[kael.tensor([1, 0], dtype=kael.uint8)],
        "uint8 mask, the fast door": lambda: x[kael.ones(2, 3, dtype=kael.uint8)],
        "out= resized": lambda: kael.add(x, 1, out=kael.empty(3)),
        "complex into real": lambda: kael.empty(2).copy_(kael.tensor([1 + 1j, 2j])),
        "a read-only array": lambda: kael.from_numpy(np.broadcast_to(np.ones(3), (2, 3))),
    }
    for name, call in calls.items():
        for w in _caught(call):
            assert w.filename == __file__, (name, w.filename, w.lineno)


def test_a_warning_from_kael_itself_goes_to_the_first_frame_outside_the_package():
    def deep():
        user_warning.warn("from a helper", RuntimeWarning)

    (w,) = _caught(deep)
    assert w.filename == __file__ and w.category is RuntimeWarning
    assert w.lineno == deep.__code__.co_firstlineno + 1  # this file's frames are the user's


def test_warn_once_warns_the_first_time_only_unless_warn_always_is_set():
    """torch's TORCH_WARN_ONCE: once per process (tests/conftest.py gives each test a fresh
    set); kael.set_warn_always(True) repeats it, as torch.set_warn_always does."""

    def twice():
        user_warning.warn_once("given once")
        user_warning.warn_once("given once")

    assert len(_caught(twice)) == 1
    assert not any("given once" in str(w.message) for w in _caught_any(twice))
    try:
        kael.set_warn_always(True)
        assert len(_caught(twice)) == 2
    finally:
        kael.set_warn_always(False)


def _caught_any(fn) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return caught


def test_torchs_once_warnings_are_given_once_as_torch_gives_them():
    x, i = kael.zeros(3), kael.tensor([0, 1, 2])
    calls = {
        "scatter reduce": lambda: x.scatter_(0, i, kael.ones(3), reduce="add"),
        "where uint8": lambda: kael.where(kael.ones(2, dtype=kael.uint8), x[:2], 0.0),
        "complex to real": lambda: kael.empty(2).copy_(kael.tensor([1 + 1j, 2j])),
        "index_reduce beta": lambda: x.index_reduce(0, i, x, "prod"),
        "0-d .T": lambda: kael.tensor(1.0).T,
        "chain_matmul": lambda: kael.chain_matmul(kael.eye(2), kael.eye(2)),
    }
    for name, call in calls.items():
        assert len(_caught(lambda call=call: (call(), call()))) == 1, name
