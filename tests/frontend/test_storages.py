"""kael.UntypedStorage, Tensor.untyped_storage, set_ with a storage, is_set_to and
share_memory_ (fork children see writes both ways) against PyTorch's storage API."""

import gc
import multiprocessing
import re
import sys
import weakref

import numpy as np
import pytest
import torch
from kernel_helpers import run_python
from parity_helpers import same

import kael
from kael import UntypedStorage

DTYPES = {
    "float32": (kael.float32, torch.float32),
    "float64": (kael.float64, torch.float64),
    "float16": (kael.float16, torch.float16),
    "bfloat16": (kael.bfloat16, torch.bfloat16),
    "int64": (kael.int64, torch.int64),
    "int32": (kael.int32, torch.int32),
    "uint8": (kael.uint8, torch.uint8),
    "bool": (kael.bool, torch.bool),
}


def _pair(n: int = 6, dtype: str = "float32"):
    """kael and torch tensors of arange(n) in `dtype` (bool: alternating)."""
    kd, td = DTYPES[dtype]
    values = np.arange(n) % 2 if dtype == "bool" else np.arange(n) - 2
    return kael.tensor(values.tolist(), dtype=kd), torch.tensor(values.tolist(), dtype=td)


def _storage_pair(values):
    """A kael and a torch UntypedStorage holding byte `values`."""
    return UntypedStorage(list(values)), torch.UntypedStorage(list(values))


def _raises_as_torch(kael_call, torch_call, error, message: str) -> None:
    """Both refuse; kael with `error` and torch's message (matched literally)."""
    with pytest.raises((RuntimeError, TypeError, IndexError)) as torch_error:
        torch_call()
    assert message in str(torch_error.value)
    with pytest.raises(error, match=re.escape(message)):
        kael_call()


# ---- the storage of a tensor --------------------------------------------------------------


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_untyped_storage_holds_the_tensors_bytes(dtype):
    k, t = _pair(6, dtype)
    ks, ts = k.untyped_storage(), t.untyped_storage()
    assert ks.tolist() == ts.tolist()
    assert (ks.nbytes(), ks.size(), len(ks), ks.element_size()) == (
        ts.nbytes(),
        ts.size(),
        len(ts),
        ts.element_size(),
    )
    assert str(ks.device) == str(ts.device) == "cpu"


LAYOUTS = {
    "transposed": lambda x: x.reshape(2, 3).T,
    "sliced": lambda x: x[1:5:2],
    "expanded": lambda x: x[:1].expand(4, 1),
    "zero_d": lambda x: x[2],
    "empty": lambda x: x[3:3],
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_views_storage_is_its_bases_whole_storage(layout):
    k, t = _pair(6)
    kv, tv = LAYOUTS[layout](k), LAYOUTS[layout](t)
    assert kv.untyped_storage().tolist() == tv.untyped_storage().tolist()
    assert kv.untyped_storage().data_ptr() == k.untyped_storage().data_ptr()
    assert kv.storage_offset() == tv.storage_offset()


def test_an_empty_tensors_storage_has_no_bytes():
    ks, ts = kael.empty(0).untyped_storage(), torch.empty(0).untyped_storage()
    assert (ks.nbytes(), ks.tolist(), ks.data_ptr()) == (ts.nbytes(), ts.tolist(), 0)


def test_every_view_reports_one_storage_object():
    k, t = _pair(6)
    assert k.untyped_storage() is k[2:].untyped_storage()
    assert t.untyped_storage() is t[2:].untyped_storage()  # torch's identity, too
    assert k.view(2, 3).untyped_storage().data_ptr() == k.untyped_storage().data_ptr()


def test_a_clone_has_another_storage():
    k, t = _pair(6)
    for x in (k, t):
        assert x.clone().untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


# ---- byte access ------------------------------------------------------------------------


@pytest.mark.parametrize("index", [0, 5, 23, -1, -24])
def test_a_byte_reads_as_an_int_in_range(index):
    k, t = _pair(6)
    assert k.untyped_storage()[index] == t.untyped_storage()[index]


@pytest.mark.parametrize("index", [24, -25, 100])
def test_a_byte_index_past_either_end_is_refused(index):
    k, t = _pair(6)
    wrapped = index + 24 if index < 0 else index
    _raises_as_torch(
        lambda: k.untyped_storage()[index],
        lambda: t.untyped_storage()[index],
        kael.IndexError,
        f"index {wrapped} out of range for storage of size 24",
    )


def test_a_non_int_key_is_refused():
    ks, ts = _storage_pair([1, 2, 3])
    _raises_as_torch(lambda: ks["a"], lambda: ts["a"], kael.TypeError, "with str")
    with pytest.raises(kael.TypeError, match="with Tensor"):
        ks[kael.tensor(1)]


@pytest.mark.parametrize("key", [slice(1, 3), slice(-3, None), slice(2, 10), slice(3, 1)])
def test_a_slice_reads_those_bytes(key):
    ks, ts = _storage_pair([10, 20, 30, 40])
    assert ks[key].tolist() == ts[key].tolist()
    assert ks[key].nbytes() == ts[key].nbytes()


def test_a_slice_shares_its_bases_memory():
    ks, ts = _storage_pair([10, 20, 30, 40])
    for s in (ks, ts):
        part = s[1:3]
        part[0] = 99
        assert part.data_ptr() == s.data_ptr() + 1
    assert ks.tolist() == ts.tolist() == [10, 99, 30, 40]


@pytest.mark.parametrize("step", [2, -1])
def test_a_slice_step_other_than_one_is_refused(step):
    ks, ts = _storage_pair([1, 2, 3, 4])
    _raises_as_torch(
        lambda: ks[::step],
        lambda: ts[::step],
        kael.Error,
        f"Trying to slice with a step of {step}, but only a step of 1 is supported",
    )
    with pytest.raises(kael.Error, match="step of 2"):
        ks[0:4:2] = 1


@pytest.mark.parametrize("value", [0, 255, 256, -1, 300, -129, True])
def test_setting_a_byte_wraps_modulo_256(value):
    ks, ts = _storage_pair([1, 2, 3])
    ks[1], ts[1] = value, value
    ks[2], ts[2] = value, value
    assert ks.tolist() == ts.tolist()


def test_setting_a_slice_sets_each_byte_in_it():
    ks, ts = _storage_pair([1, 2, 3, 4])
    for s in (ks, ts):
        s[1:10] = 300
        s[3:1] = 5  # empty: nothing set
    assert ks.tolist() == ts.tolist() == [1, 44, 44, 44]


@pytest.mark.parametrize(
    ("value", "name"),
    [(1.5, "float"), ("a", "str"), (None, "NoneType"), (np.int64(7), "numpy.int64")],
)
def test_setting_a_non_int_byte_is_refused(value, name):
    ks, ts = _storage_pair([1, 2])
    _raises_as_torch(
        lambda: ks.__setitem__(0, value),
        lambda: ts.__setitem__(0, value),
        kael.TypeError,
        f"can only set storage content with a int types, but got {name} instead",
    )


@pytest.mark.parametrize("index", [2, -1, -3])
def test_setting_a_byte_outside_zero_to_size_is_refused(index):
    ks, ts = _storage_pair([1, 2])
    with pytest.raises(RuntimeError, match="out of bounds"):
        ts[index] = 1  # torch's writes take no negative index
    with pytest.raises(kael.IndexError, match=f"index {index} out of range for storage of size 2"):
        ks[index] = 1
    ks[1], ts[1] = 5, 5  # the last byte is in range
    assert ks.tolist() == ts.tolist()


@pytest.mark.parametrize("value", [0, 7, 255, 256, -1])
def test_fill_sets_every_byte_wrapped(value):
    ks, ts = _storage_pair([1, 2, 3])
    assert ks.fill_(value) is ks
    ts.fill_(value)
    assert ks.tolist() == ts.tolist()


def test_fill_of_an_empty_storage_does_nothing():
    assert UntypedStorage(0).fill_(3).tolist() == torch.UntypedStorage(0).fill_(3).tolist() == []


@pytest.mark.parametrize("value", [1.5, "a"])
def test_fill_with_a_non_int_is_refused(value):
    ks, ts = _storage_pair([1])
    _raises_as_torch(
        lambda: ks.fill_(value),
        lambda: ts.fill_(value),
        kael.TypeError,
        f"fill_ expects int, but got {type(value).__name__}",
    )


def test_copy_writes_the_sources_bytes():
    (ks, ts), (ksrc, tsrc) = _storage_pair([1, 2, 3]), _storage_pair([7, 8, 9])
    assert ks.copy_(ksrc) is ks
    ts.copy_(tsrc)
    assert ks.tolist() == ts.tolist() == [7, 8, 9]


def test_copy_between_overlapping_slices_reads_before_writing():
    ks, ts = _storage_pair([1, 2, 3, 4, 5])
    ks[0:4].copy_(ks[1:5])
    ts[0:4].copy_(ts[1:5])
    assert ks.tolist() == ts.tolist()
    ks, ts = _storage_pair([1, 2, 3, 4, 5])
    ks[1:5].copy_(ks[0:4])
    assert ks.tolist() == [1, 1, 2, 3, 4]  # torch copies forward here: elementwise aliasing


def test_copy_of_another_size_is_refused():
    ks, ts = _storage_pair([1, 2, 3])
    _raises_as_torch(
        lambda: ks.copy_(UntypedStorage(2)),
        lambda: ts.copy_(torch.UntypedStorage(2)),
        kael.Error,
        "size does not match, self was 3 bytes but src was 2 bytes",
    )


def test_copy_from_a_tensor_is_refused():
    ks, ts = _storage_pair([1, 2, 3])
    with pytest.raises(TypeError, match="must be torch.Storage, not Tensor"):
        ts.copy_(torch.zeros(3, dtype=torch.uint8))
    with pytest.raises(kael.TypeError, match="must be kael.UntypedStorage, not Tensor"):
        ks.copy_(kael.zeros(3, dtype=kael.uint8))


def test_clone_copies_bytes_into_new_memory():
    ks, ts = _storage_pair([4, 5, 6])
    kc, tc = ks.clone(), ts.clone()
    assert kc.tolist() == tc.tolist() and kc.data_ptr() != ks.data_ptr()
    kc[0] = 0
    assert ks[0] == 4


def test_cpu_of_a_host_storage_is_itself():
    ks, ts = _storage_pair([1])
    assert ks.cpu() is ks and ts.cpu() is ts


@pytest.mark.skipif(kael.cuda.is_available(), reason="checks the refusal without a GPU")
def test_cuda_without_a_gpu_is_refused():
    with pytest.raises(kael.Error, match="CUDA is not available"):
        UntypedStorage([1]).cuda()


@pytest.mark.parametrize("size", [6, 2, 0, 4])
def test_resize_keeps_the_first_bytes(size):
    ks, ts = _storage_pair([1, 2, 3, 4])
    assert ks.resize_(size) is ks
    ts.resize_(size)
    kept = min(size, 4)
    assert ks.nbytes() == ts.nbytes() == size
    assert ks.tolist()[:kept] == ts.tolist()[:kept]


def test_resize_back_up_keeps_views_made_before_the_shrink_readable():
    k = kael.arange(8, dtype=kael.uint8)
    s = k.untyped_storage()
    s.resize_(2)
    assert k.tolist() == list(range(8))  # the block is kept: the old view reads valid memory
    s.resize_(3)
    assert s.tolist()[:2] == [0, 1]


@pytest.mark.parametrize("size", [-1, 2.0])
def test_resize_to_a_bad_size_is_refused(size):
    ks, ts = _storage_pair([1, 2])
    with pytest.raises(RuntimeError):
        ts.resize_(size)
    error = kael.Error if size == -1 else kael.TypeError
    with pytest.raises(error, match="-1 bytes" if size == -1 else "expects an int, but got float"):
        ks.resize_(size)


# ---- constructors -------------------------------------------------------------------------


@pytest.mark.parametrize("args", [(), (5,), (0,), ([1, 2, 300],), ((1, 2),), ([1, 2, -1],)])
def test_constructors_give_torchs_sizes_and_bytes(args):
    ks, ts = UntypedStorage(*args), torch.UntypedStorage(*args)
    assert ks.nbytes() == ts.nbytes()
    assert str(ks.device) == "cpu" and not ks.is_shared()
    if args and isinstance(args[0], list | tuple):
        assert ks.tolist() == ts.tolist()


def test_constructing_from_a_float_is_refused():
    _raises_as_torch(
        lambda: UntypedStorage(2.0),
        lambda: torch.UntypedStorage(2.0),
        kael.TypeError,
        "UntypedStorage(): Expected a sequence type, but got float",
    )


@pytest.mark.parametrize("item", [1.5, "a"])
def test_constructing_from_a_sequence_of_non_ints_is_refused(item):
    name = type(item).__name__
    _raises_as_torch(
        lambda: UntypedStorage([1, item]),
        lambda: torch.UntypedStorage([1, item]),
        kael.TypeError,
        f"but one of the items was of type {name} instead of int",
    )


def test_constructing_a_negative_size_is_refused():
    with pytest.raises(RuntimeError):
        torch.UntypedStorage(-1)
    with pytest.raises(kael.Error, match="-1 bytes"):
        UntypedStorage(-1)


# ---- set_ with a storage ----------------------------------------------------------------

SET_FORMS = {
    "whole": lambda s: (s,),
    "offset_and_size": lambda s: (s, 2, (2, 3)),
    "strides": lambda s: (s, 1, (2, 3), (1, 2)),
    "every_other": lambda s: (s, 0, (3,), (2,)),
    "empty_far_offset": lambda s: (s, 50, (0,)),
    "grows": lambda s: (s, 3, (2, 5)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "float16"])
@pytest.mark.parametrize("form", sorted(SET_FORMS))
def test_set_to_a_storage_views_its_bytes_as_torch(form, dtype):
    k, t = _pair(10, dtype)
    ks, ts = k.untyped_storage(), t.untyped_storage()
    kd, td = DTYPES[dtype]
    kx, tx = kael.empty(0, dtype=kd), torch.empty(0, dtype=td)
    assert kx.set_(*SET_FORMS[form](ks)) is kx
    tx.set_(*SET_FORMS[form](ts))
    assert (kx.shape, kx.stride(), kx.storage_offset()) == (
        tuple(tx.shape),
        tx.stride(),
        tx.storage_offset(),
    )
    assert ks.nbytes() == ts.nbytes()
    if form == "grows":  # the grown tail is uninitialised: compare the old elements
        same(kx.reshape(-1)[:7], tx.reshape(-1)[:7])
    else:
        same(kx, tx)
    assert kx.untyped_storage() is ks


def test_set_to_a_storage_leaves_out_a_partial_element():
    for nbytes in (15, 16, 0):
        kx = kael.empty(0, dtype=kael.float64).set_(UntypedStorage(nbytes))
        tx = torch.empty(0, dtype=torch.float64).set_(torch.UntypedStorage(nbytes))
        assert kx.shape == tuple(tx.shape) == (nbytes // 8,)


def test_set_to_a_storage_sees_later_writes_to_it():
    ks = UntypedStorage(8)
    kx = kael.empty(0, dtype=kael.uint8).set_(ks)
    ks.fill_(9)
    assert kx.tolist() == [9] * 8


SET_ERRORS = {
    "negative_offset": (lambda s: (s, -1, (2,)), kael.ValueError, "invalid storage offset -1"),
    "stride_length": (
        lambda s: (s, 0, (2,), (1, 2)),
        kael.ValueError,
        "unequal size length (1) and stride length (2)",
    ),
    "float_offset": (lambda s: (s, 1.0, (2,)), kael.TypeError, "float"),
    "offset_without_size": (lambda s: (s, 1), kael.TypeError, "size"),
    "not_a_storage": (lambda s: ("a",), kael.TypeError, "str"),
}


@pytest.mark.parametrize("case", sorted(SET_ERRORS))
def test_set_to_a_storage_refuses_bad_arguments(case):
    build, error, match = SET_ERRORS[case]
    ks, ts = UntypedStorage(16), torch.UntypedStorage(16)
    with pytest.raises((RuntimeError, TypeError)):
        torch.empty(0).set_(*build(ts))
    with pytest.raises(error, match=re.escape(match)):
        kael.empty(0).set_(*build(ks))


def test_set_to_a_tensor_still_takes_its_layout():
    k, t = _pair(6)
    kx, tx = kael.empty(0).set_(k[1:].view(5)), torch.empty(0).set_(t[1:].view(5))
    same(kx, tx)
    assert kx.storage_offset() == tx.storage_offset() == 1


# ---- is_set_to --------------------------------------------------------------------------

IS_SET_TO = {
    "set_to_it": lambda x: (x.new().set_(x), x),
    "itself": lambda x: (x, x),
    "same_layout_view": lambda x: (x.view(4), x),
    "as_strided_same": lambda x: (x.as_strided((4,), (1,), 0), x),
    "other_dtype_same_layout": lambda x: (x.view(x.dtype), x),
    "offset_differs": lambda x: (x[1:], x),
    "shape_differs": lambda x: (x.view(2, 2), x),
    "clone": lambda x: (x.clone(), x),
    "two_empties": lambda x: (x[:0].clone(), x[:0].clone()),
}


@pytest.mark.parametrize("case", sorted(IS_SET_TO))
def test_is_set_to_needs_one_storage_offset_shape_and_strides(case):
    k, t = _pair(4)
    ka, kb = IS_SET_TO[case](k)
    ta, tb = IS_SET_TO[case](t)
    assert ka.is_set_to(kb) is ta.is_set_to(tb)


def test_is_set_to_a_non_tensor_is_refused():
    k, t = _pair(4)
    _raises_as_torch(
        lambda: k.is_set_to(3),
        lambda: t.is_set_to(3),
        kael.TypeError,
        "is_set_to(): argument 'tensor' (position 1) must be Tensor, not int",
    )


# ---- shared memory ----------------------------------------------------------------------


def test_share_memory_moves_every_views_storage():
    k, t = _pair(6)
    kv, tv = k[2:], t[2:]
    before = k.untyped_storage().data_ptr()
    assert k.is_shared() is t.is_shared() is False
    assert k.share_memory_() is k and t.share_memory_() is t
    assert k.is_shared() and kv.is_shared() and t.is_shared() and tv.is_shared()
    assert k.untyped_storage().data_ptr() != before
    assert kv.untyped_storage().data_ptr() == k.untyped_storage().data_ptr()
    same(kv, tv)
    same(k, t)


def test_share_memory_twice_is_a_no_op():
    k = kael.arange(4.0).share_memory_()
    ptr = k.data_ptr()
    assert k.share_memory_().data_ptr() == ptr
    assert k.untyped_storage().share_memory_().data_ptr() == ptr


def test_share_memory_of_a_storage_and_of_an_empty_tensor():
    ks, ts = _storage_pair([1, 2, 3])
    assert ks.share_memory_() is ks and ts.share_memory_() is ts
    assert ks.is_shared() and ts.is_shared() and ks.tolist() == ts.tolist()
    ke, te = kael.empty(0).share_memory_(), torch.empty(0).share_memory_()
    assert ke.is_shared() and te.is_shared()  # torch counts an empty storage as shared too


def test_a_shared_storage_cannot_grow_but_a_tensor_over_it_can_shrink():
    k = kael.arange(6.0).share_memory_()
    assert not k.untyped_storage().resizable()
    with pytest.raises(kael.Error, match="Trying to resize storage that is not resizable"):
        k.resize_(100)
    with pytest.raises(kael.Error, match="not resizable"):
        k.untyped_storage().resize_(8)
    same(k.resize_(3), torch.arange(6.0).share_memory_().resize_(3))


def test_shared_tensors_work_in_ops():
    ka, ta = kael.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    ka.share_memory_()
    ta.share_memory_()
    same(ka + 1, ta + 1)
    same(ka @ ka.T, ta @ ta.T)
    ka.add_(2)
    ta.add_(2)
    same(ka, ta)


def test_a_slice_taken_before_sharing_stays_readable():
    k = kael.arange(4, dtype=kael.uint8)
    part = k.untyped_storage()[1:3]
    k.share_memory_()
    gc.collect()
    assert part.tolist() == [1, 2]  # the old block is retired with the storage, not freed


def test_sharing_a_numpy_backed_tensor_keeps_the_array_valid():
    array = np.arange(4.0)
    k = kael.from_numpy(array)
    k.share_memory_()
    k.fill_(1.0)
    assert array.tolist() == [0.0, 1.0, 2.0, 3.0] and k.tolist() == [1.0] * 4


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_shared_memory_is_freed_with_its_last_tensor():
    refs = []
    start = _rss_bytes()
    for _ in range(100):
        k = kael.ones(1 << 18).share_memory_()  # 1 MiB, touched by the copy into it
        refs.append(weakref.ref(k._impl.storage.owner))
        del k
    gc.collect()
    assert all(r() is None for r in refs)
    assert _rss_bytes() - start < 40 << 20  # 100 MiB if the mappings leaked


# ---- across fork ------------------------------------------------------------------------

needs_fork = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="no fork start method here"
)


def _child_fills(tensor, value, queue) -> None:
    tensor.fill_(value)
    queue.put("written")


def _child_reads(tensor, queue) -> None:
    queue.put(tensor.tolist())


def _in_child(target, *args):
    """Run target(*args, queue) in a forked child; its one message."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=target, args=(*args, queue))
    child.start()
    try:
        message = queue.get(timeout=30)
    finally:
        child.join(30)
    assert child.exitcode == 0
    return message


@needs_fork
def test_a_childs_write_to_a_shared_tensor_reaches_the_parent():
    k = kael.zeros(2, 3).share_memory_()
    view = k[1]
    _in_child(_child_fills, view, 5.0)
    assert k.tolist() == [[0.0] * 3, [5.0] * 3]


@needs_fork
def test_the_parents_later_write_reaches_a_child():
    k = kael.zeros(4, dtype=kael.int64).share_memory_()
    k.fill_(3)  # after the share, before the fork's child reads
    context = multiprocessing.get_context("fork")
    queue, go = context.Queue(), context.Event()
    child = context.Process(target=_child_reads_after, args=(k, go, queue))
    child.start()
    k.fill_(7)  # after the fork: only a shared mapping carries it over
    go.set()
    assert queue.get(timeout=30) == [7] * 4
    child.join(30)
    assert child.exitcode == 0


def _child_reads_after(tensor, go, queue) -> None:
    go.wait(30)
    queue.put(tensor.tolist())


@needs_fork
def test_a_childs_write_to_an_unshared_tensor_stays_in_the_child():
    k = kael.zeros(3)
    _in_child(_child_fills, k, 5.0)
    assert k.tolist() == [0.0] * 3 and not k.is_shared()


# ---- growing a shrunk storage: older views stay inside the block ------------------------

# UntypedStorage.resize_ shrinking keeps the block (4000 bytes of ones: a 4096-byte block),
# so a view made before the shrink still reads 4000 bytes: a later growth must never hand the
# storage a block smaller than that.
OLD_BLOCK = 4096


@pytest.mark.parametrize(("numel", "new_block"), [(8, False), (1024, False), (1025, True)])
def test_tensor_resize_after_a_storage_shrink_keeps_older_views_inside_the_block(numel, new_block):
    kx, tx = kael.ones(1000), torch.ones(1000)
    storage = kx._impl.storage
    ptr = storage.ptr
    kz, tz = kx[:4], tx[:4]
    for x, z in ((kx, kz), (tx, tz)):
        x.untyped_storage().resize_(16)
        z.resize_(numel)
    assert kz.untyped_storage().nbytes() == tz.untyped_storage().nbytes() == 4 * numel
    same(kz[:4], tz[:4])  # the bytes the storage kept; the rest torch leaves uninitialised
    assert (storage.ptr != ptr) is new_block  # within the old block only the size changes
    assert storage.capacity >= OLD_BLOCK
    if not new_block:
        assert kx.tolist() == [1.0] * 1000  # the older view reads the block it was made over


GROW_AFTER_SHRINK = """
import kael
x = kael.ones(1 << 22)  # a 16 MiB block
x.untyped_storage().resize_(16)
z = x[:4]
z.resize_(8)  # 32 bytes: within the kept block, which x still reads all of
print(x.untyped_storage().nbytes(), z[:4].tolist(), float(x.sum()))
"""


def test_tensor_resize_after_a_storage_shrink_leaves_the_older_view_readable():
    fields = run_python(GROW_AFTER_SHRINK).stdout.split(maxsplit=1)
    tx = torch.ones(1 << 22)
    tx.untyped_storage().resize_(16)
    tz = tx[:4]
    tz.resize_(8)
    assert int(fields[0]) == tz.untyped_storage().nbytes() == 32
    assert fields[1].strip() == f"{tz[:4].tolist()} {float(1 << 22)}"


SHARE_AFTER_SHRINK = """
import kael
x = kael.ones(1 << 22)  # a 16 MiB block
x.untyped_storage().resize_(16)
x.share_memory_()  # the mapping must cover the 16 MiB x still reads, not 16 bytes
storage = x._impl.storage
print(storage.nbytes, x.is_shared(), len(storage.owner), x[:4].tolist())
print(float(x.sum()))
"""


def test_sharing_a_shrunk_storage_maps_its_whole_block_and_copies_its_bytes():
    lines = run_python(SHARE_AFTER_SHRINK).stdout.splitlines()
    tx = torch.ones(1 << 22)
    tx.untyped_storage().resize_(16)
    tx.untyped_storage().share_memory_()
    nbytes, shared, mapped, values = lines[0].split(maxsplit=3)
    assert int(nbytes) == tx.untyped_storage().nbytes() == 16
    assert shared == str(tx.is_shared()) == "True"
    assert int(mapped) >= 4 << 22
    assert values == str(tx[:4].tolist())
    float(lines[1])  # the older view's whole extent was read without a fault


GROWS_OF_A_SHARED_EMPTY = {
    "tensor_resize_": lambda k: k.resize_(4),
    "set_": lambda k: kael.empty(0).set_(k.untyped_storage(), 0, (4,)),
    "storage_resize_": lambda k: k.untyped_storage().resize_(16),
}


@pytest.mark.parametrize("grow", sorted(GROWS_OF_A_SHARED_EMPTY))
def test_an_empty_shared_storage_refuses_to_grow(grow):
    # torch crashes here; its refusal of a storage it cannot resize is the message
    array = np.zeros(2)
    _raises_as_torch(
        lambda: kael.from_numpy(array).resize_(8),
        lambda: torch.from_numpy(array).resize_(8),
        kael.Error,
        "Trying to resize storage that is not resizable",
    )
    k = kael.empty(0).share_memory_()
    with pytest.raises(kael.Error, match=re.escape("not resizable (from 0 to 16 bytes)")):
        GROWS_OF_A_SHARED_EMPTY[grow](k)
    assert k.is_shared() and not k.untyped_storage().resizable()
    assert k.shape == (0,) and k.untyped_storage().nbytes() == 0


def test_an_empty_shared_tensor_may_take_shapes_needing_no_bytes():
    k, t = kael.empty(0).share_memory_(), torch.empty(0).share_memory_()
    same(k.resize_(3, 0), t.resize_(3, 0))
    assert k.is_shared() and t.is_shared()


def test_unshared_host_storage_is_resizable_as_torchs():
    ks, ts = UntypedStorage(4), torch.UntypedStorage(4)
    assert ks.resizable() is ts.resizable() is True
    assert UntypedStorage(0).resizable() is torch.UntypedStorage(0).resizable() is True


# ---- growing GPU storage (emulated: KAEL_EMULATE_CUDA=1) --------------------------------


@pytest.mark.gpu
def test_set_grows_a_cuda_storage_as_torch_grows_a_host_one():
    kx, ky = kael.zeros(2, device="cuda"), kael.zeros(0, device="cuda")
    tx, ty = torch.zeros(2), torch.zeros(0)
    ky.set_(kx, 0, (4,), (1,))
    ty.set_(tx, 0, (4,), (1,))
    assert ky.shape == tuple(ty.shape) and str(ky.device) == "cuda:0"
    assert kx.untyped_storage().nbytes() == tx.untyped_storage().nbytes() == 16
    same(ky[:2].cpu(), ty[:2])


@pytest.mark.gpu
@pytest.mark.parametrize("size", [16, 2, 0, 4])
def test_a_cuda_storage_is_shared_yet_resizable(size):
    ks = UntypedStorage([1, 2, 3, 4], device="cuda")
    ts = torch.UntypedStorage([1, 2, 3, 4])
    assert ks.is_shared() and ks.resizable()  # torch: a GPU storage is shared, and resizable
    assert ks.resize_(size) is ks
    ts.resize_(size)
    kept = min(size, 4)
    assert ks.nbytes() == ts.nbytes() == size
    assert ks.tolist()[:kept] == ts.tolist()[:kept]


@pytest.mark.gpu
def test_tensor_resize_grows_a_cuda_tensor_keeping_its_values():
    k, t = kael.arange(3.0, device="cuda"), torch.arange(3.0)
    k.resize_(2, 4)
    t.resize_(2, 4)
    assert k.shape == tuple(t.shape) and str(k.device) == "cuda:0"
    same(k.reshape(-1)[:3].cpu(), t.reshape(-1)[:3])


@pytest.fixture
def device_room(monkeypatch):
    """Set the emulated device's free memory to `room` bytes (a GPU's cannot be set)."""
    from kael.runtime import cuda_driver

    if not cuda_driver.emulated():
        pytest.skip("sets the emulated device's memory (KAEL_EMULATE_CUDA=1)")
    from kael.runtime.emulator import driver, memory

    def room(nbytes: int) -> None:
        kael.empty_cache()
        monkeypatch.setattr(memory, "TOTAL_BYTES", driver._memory.in_use + nbytes)

    return room


@pytest.mark.gpu
@pytest.mark.parametrize(("mib", "new_block"), [(5, False), (6, False), (7, True)])
def test_a_cuda_storage_grows_by_its_real_block_not_its_bucket(device_room, mib, new_block):
    # 7 MiB free: 4.5 MiB of float32 cannot have its 8 MiB bucket and gets 6 MiB of its own
    device_room(7 << 20)
    kx = kael.full((9 << 17,), 2.0, device="cuda")
    ks = kx.untyped_storage()
    ptr = ks.data_ptr()
    assert kx._impl.storage.capacity == 6 << 20
    device_room(8 << 20)  # room for a new 8 MiB block beside the old one
    ks.resize_(mib << 20)
    assert ks.nbytes() == mib << 20
    assert (ks.data_ptr() != ptr) is new_block
    whole = kael.empty(0, dtype=kael.uint8, device="cuda").set_(ks)
    whole[-4:].fill_(7)  # the last bytes are inside the block (the emulator faults otherwise)
    assert whole[-4:].tolist() == [7] * 4
    tx = torch.full((9 << 17,), 2.0)
    same(kx.sum().cpu(), tx.sum())  # the older view's values were kept


@pytest.mark.gpu
def test_a_grown_pinned_tensor_stays_pinned():
    k = kael.arange(4.0).pin_memory()
    k.resize_(1000)
    assert k.is_pinned()
    same(k[:4], torch.arange(4.0))
