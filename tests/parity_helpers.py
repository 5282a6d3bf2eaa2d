"""The comparison the parity and differential tests share: a kael result against torch's."""

import threading
import warnings

import numpy as np
import pytest
import torch
from kernel_helpers import KAEL_DTYPES, TORCH_DTYPES

import kael


def same(k, t) -> None:
    """kael's result against torch's: tensors by shape, dtype and values; tuples item by item."""
    if isinstance(t, torch.Tensor):
        assert isinstance(k, kael.Tensor), type(k)
        assert k.shape == tuple(t.shape)
        assert k.dtype is KAEL_DTYPES[t.dtype]
        if t.dtype.is_floating_point:
            tol = 1e-5 if t.dtype is torch.float32 else 1e-12
            np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=tol, atol=tol, equal_nan=True)
        else:
            np.testing.assert_array_equal(k.numpy(), t.numpy())
        return
    assert isinstance(k, tuple | list) and len(k) == len(t), (type(k), type(t))
    for a, b in zip(k, t):
        same(a, b)


def same_tree(ours, theirs, leaf=same) -> None:
    """Two results alike through dicts (the same keys, in order), lists and tuples (the same
    types and lengths), `leaf` comparing each pair where either is a kael or torch tensor,
    == every other pair."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs)
        for key in theirs:
            same_tree(ours[key], theirs[key], leaf)
    elif isinstance(theirs, tuple | list):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same_tree(a, b, leaf)
    elif any(isinstance(x, kael.Tensor | torch.Tensor) for x in (ours, theirs)):
        leaf(ours, theirs)
    else:
        assert ours == theirs


def torch_pair(array, dtype=kael.float32):
    """`array` as a torch tensor of `dtype` and a kael tensor over a copy of its bytes."""
    t = torch.tensor(array).to(TORCH_DTYPES[dtype])
    return kael.from_dlpack(t.clone()), t


def strided_views(k, t):
    """The same five views of a kael [6, 4] matrix and its torch twin (pairs): transposed,
    strided slices, one row expanded, 0-d and empty: the layouts an elementwise op must read."""
    return [
        (k.transpose(0, 1), t.T),
        (k[1::2, ::3], t[1::2, ::3]),
        (k[0].expand(3, 4), t[0].expand(3, 4)),
        (k[2, 1], t[2, 1]),
        (k[:0], t[:0]),
    ]


def close_to_torch(k, t, tol: float, equal_nan: bool = False) -> None:
    """kael's result against torch's: shape, dtype, and values within `tol` (absolute and
    relative, compared in float64); tuples item by item."""
    if isinstance(t, tuple):
        for a, b in zip(k, t):
            close_to_torch(a, b, tol, equal_nan)
        return
    assert k.shape == tuple(t.shape) and TORCH_DTYPES[k.dtype] == t.dtype
    got = torch.from_dlpack(k.contiguous()).double()
    torch.testing.assert_close(got, t.double(), rtol=tol, atol=tol, equal_nan=equal_nan)


def matrix_pair(array, dtype=kael.float64, layout: str = "contiguous"):
    """A kael tensor and the equal torch tensor of the matrices `array`, both in `layout`
    (the same strides): transposed, every other row and column of a larger matrix (sliced),
    or one matrix expanded over a batch of 3."""
    t = torch.tensor(np.asarray(array)).to(TORCH_DTYPES[dtype])
    if layout == "transposed":
        t = t.mT.contiguous().mT
    elif layout == "sliced":
        big = torch.zeros(*t.shape[:-2], 2 * t.shape[-2], 2 * t.shape[-1], dtype=t.dtype)
        big[..., ::2, ::2] = t
        t = big[..., ::2, ::2]
    elif layout == "expanded":
        t = t[:1].expand(3, *t.shape[1:]) if t.ndim > 2 else t.expand(3, *t.shape)
    if layout == "contiguous":
        return kael.from_dlpack(t.contiguous()), t
    base = kael.from_dlpack(t._base.clone())
    return kael.as_strided(base, tuple(t.shape), t.stride(), t.storage_offset()), t


_LAYOUT_RNG = np.random.default_rng(11)
LAYOUTS = ["contiguous", "transposed", "sliced", "expanded"]


def layout_pair(shape, dtype=kael.float32, layout="contiguous", low=-3, high=4):
    """A kael tensor and the equal torch tensor of `shape` (small integers, so products are
    exact in every float dtype), laid out as `layout` says (the same view of both)."""
    shape = tuple(shape)
    base = shape
    if layout == "transposed" and len(shape) >= 2:
        base = shape[:-2] + (shape[-1], shape[-2])
    elif layout == "sliced" and shape:
        base = shape[:-1] + (2 * shape[-1],)
    elif layout == "expanded" and shape:
        base = (1,) + shape[1:]
    values = _LAYOUT_RNG.integers(low, high, base)
    t = torch.tensor(values).to(torch.bool if dtype is kael.bool else TORCH_DTYPES[dtype])
    k = kael.from_dlpack(t.clone())
    pairs = []
    for x in (k, t):
        if layout == "transposed" and len(shape) >= 2:
            x = x.transpose(-1, -2)
        elif layout == "sliced" and shape:
            x = x[..., ::2]
        elif layout == "expanded" and shape:
            x = x.expand(*shape)
        pairs.append(x)
    return pairs


def setter(index, value):
    """A change to an argument list: args[index] = value (value(args) when callable)."""
    return lambda a: a.__setitem__(index, value(a) if callable(value) else value)


def both_refuse(torch_call, kael_call, torch_error, kael_error, match: str) -> None:
    """torch and kael each refuse their call: torch with torch_error, kael with the typed
    kael_error whose message matches `match`."""
    with pytest.raises(torch_error):
        torch_call()
    with pytest.raises(kael_error, match=match):
        kael_call()


def refused_changed(name: str, args: list, change, to_kael, torch_error, kael_error, match):
    """torch.NAME and kael.NAME both refuse `args` once `change` has edited them (kael's
    arguments made by `to_kael`)."""
    change(args)
    both_refuse(lambda: getattr(torch, name)(*args), lambda: getattr(kael, name)(*to_kael(args)),
                torch_error, kael_error, match)  # fmt: skip


def resized_out(call, out, shape):
    """call(out) with an out of another shape: resized to `shape` as torch's out= does,
    with torch's deprecation warning when it held elements and silently when empty; the
    call's result."""
    held = out.numel() > 0
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = call(out)
    resized = [w for w in seen if "was resized" in str(w.message)]
    assert tuple(out.shape) == tuple(shape)
    assert len(resized) == int(held), [str(w.message) for w in seen]
    return result


def loads_and_matches(ours, theirs, shape, rtol: float = 1e-5, atol: float = 1e-6):
    """kael module `ours` has torch module `theirs`'s state keys and shapes, loads its state,
    and gives its output on one random input; returns (that input, torch's output)."""
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in theirs.state_dict().items()
    ]
    ours.load_state_dict(theirs.state_dict())
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    want = theirs(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(ours(kael.tensor(x)).numpy(), want, rtol=rtol, atol=atol)
    return x, want


def door_and_full(memo: dict, kept: dict, call):
    """(call() with `kept` in a fast door's memo, call() with the memo emptied): the door's
    replay and the full door's result of one call, to compare."""
    memo.update(kept)
    served = call()
    memo.clear()
    return served, call()


def in_threads(work, count: int = 4) -> None:
    """Run work(k) for k in range(count), each on a thread of its own, all at once."""
    threads = [threading.Thread(target=work, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
