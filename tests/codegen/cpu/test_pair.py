"""A chain of launches beside another launch (kael/codegen/cpu/pair.py): the chain runs in
order as one item, every item of the other launch runs once, on one thread or two."""

import numpy as np
import pytest
from kernel_helpers import order_kernel

import kael
from kael.codegen.cpu import pair


@pytest.mark.parametrize("items", [1, 2, 9, 200])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_chain_runs_in_order_and_every_other_item_once(items, threads):
    fn = order_kernel()
    chain_out, other_out = np.zeros(3), np.full(items, 5.0)
    chain = [
        (fn, [chain_out.ctypes.data, 10], 3),  # out[i] = i + 1
        (fn, [chain_out.ctypes.data, 10], 2),  # out[i] = 10 (i + 1) + i + 1 for i < 2
    ]
    saved = kael.get_num_threads()
    kael.set_num_threads(threads)
    try:
        pair.step(chain, (fn, [other_out.ctypes.data, 2], items))()
    finally:
        kael.set_num_threads(saved)
    np.testing.assert_array_equal(chain_out, [11.0, 22.0, 3.0])  # the second after the first
    np.testing.assert_array_equal(other_out, 10.0 + np.arange(1, items + 1))  # each once


def test_a_chain_run_in_order_alone_gives_the_same():
    fn = order_kernel()
    out = np.zeros(3)
    for step in pair.in_order([(fn, [out.ctypes.data, 10], 3), (fn, [out.ctypes.data, 10], 2)]):
        step()
    np.testing.assert_array_equal(out, [11.0, 22.0, 3.0])


@pytest.mark.parametrize("chains", [1, 2, 7])
@pytest.mark.parametrize("threads", [1, 2])
def test_each_chain_runs_in_order_beside_the_others(chains, threads):
    fn = order_kernel()
    outs = [np.zeros(3) for _ in range(chains)]
    saved = kael.get_num_threads()
    kael.set_num_threads(threads)
    try:
        pair.chains_step(
            [[(fn, [out.ctypes.data, 10], 3), (fn, [out.ctypes.data, 10], 2)] for out in outs]
        )()
    finally:
        kael.set_num_threads(saved)
    for out in outs:
        np.testing.assert_array_equal(out, [11.0, 22.0, 3.0])  # the second after the first


def test_one_chain_runs_inline_and_lets_other_threads_run():
    """One chain has no other to run beside: on the calling thread, without the GIL for
    its (long) work; several go to the pool."""
    from kael.runtime import launcher

    fn = order_kernel()
    one = pair.chains_step([[(fn, [0, 1], 1)]])
    assert launcher.inline(one.moved, 2) and one.moved >= launcher.RELEASE_BYTES
    assert not launcher.inline(pair.chains_step([[(fn, [0, 1], 1)]] * 2).moved, 2)
