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
