"""torch's small utilities and other names: concat, clone, numel, is_tensor, detach,
broadcast_shapes, can_cast, rsub and unravel_index, against PyTorch."""

import itertools

import numpy as np
import pytest
import torch
from kernel_helpers import TORCH_DTYPES

import kael

DTYPE_NAMES = [
    "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
    "float64",
]  # fmt: skip


@pytest.mark.parametrize("name", ["concat", "concatenate"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_concat_and_concatenate_are_cat(name, dim, like_torch):
    a, b = np.arange(6.0).reshape(2, 3), np.arange(6.0, 12.0).reshape(2, 3)
    k = getattr(kael, name)([kael.tensor(a), kael.tensor(b)], dim=dim)
    t = getattr(torch, name)([torch.tensor(a), torch.tensor(b)], dim=dim)
    like_torch(k, t)
    assert not hasattr(kael.Tensor, name)  # torch.Tensor has no concat method either


@pytest.mark.parametrize("shape", [(2, 3), (), (0, 4)])
def test_clone_function_copies_into_new_storage_in_torchs_layout(shape):
    # kael.clone is Tensor.clone: torch's preserve_format keeps a transposed layout
    n = int(np.prod(shape))
    base = kael.arange(24.0)[:n].reshape(shape)
    source = base.transpose(0, 1) if len(shape) == 2 else base
    k = kael.clone(source)
    t = torch.clone(torch.arange(24.0)[:n].reshape(shape))
    t = t.transpose(0, 1) if len(shape) == 2 else t
    assert (k.shape, k.dtype) == (tuple(t.shape), kael.float32)
    np.testing.assert_array_equal(k.numpy(), t.numpy())
    assert k.stride() == torch.clone(t).stride() and not k.shares_storage(base)


def test_numel_and_is_tensor_match_torch():
    for shape in [(2, 3), (), (0, 5), (4,)]:
        assert kael.numel(kael.zeros(shape)) == torch.numel(torch.zeros(shape))
    for value in [kael.ones(2), 1, 1.5, [1], None, np.ones(2)]:
        assert kael.is_tensor(value) is isinstance(value, kael.Tensor)
    assert kael.is_tensor(kael.tensor(3))


def test_detach_shares_storage_and_layout():
    x = kael.arange(6.0).reshape(2, 3).t()
    d = kael.detach(x)
    assert d is not x and d.shares_storage(x)
    assert (d.shape, d.strides(), d.storage_offset()) == (x.shape, x.strides(), 0)
    d[0, 0] = 42.0
    assert float(x[0, 0]) == 42.0


@pytest.mark.parametrize("name", ["numel", "clone", "detach", "rsub", "unravel_index"])
def test_tensor_utilities_refuse_non_tensors(name):
    args = {"rsub": ([1.0], 2), "unravel_index": ([1], (2,))}.get(name, ([1.0],))
    with pytest.raises(kael.TypeError, match="Tensor"):
        getattr(kael, name)(*args)


@pytest.mark.parametrize(
    "shapes",
    [
        ((2, 1), (3,)),
        ((1,), (5, 4, 1), (4, 3)),
        (3, (2, 1)),
        (),
        ((),),
        ((0, 1), (1, 4)),
        ([2, 3], [2, 3]),
        (1, 1),
    ],
)
def test_broadcast_shapes_matches_torch(shapes):
    k, t = kael.broadcast_shapes(*shapes), torch.broadcast_shapes(*shapes)
    assert isinstance(k, tuple) and isinstance(k, kael.Size)
    assert k == tuple(t)


@pytest.mark.parametrize(
    ("shapes", "error", "message"),
    [
        (((2, 3), (4,)), kael.ValueError, "dimension of length 4 at -1! Mismatching argument at index 1 had \\(4,\\)"),
        (((2, -1),), kael.ValueError, "broadcast a dimension with negative length"),
        (((2, 3), (3, 3)), kael.ValueError, "should be broadcastable to \\[2, 3\\]"),
        ((("a",),), kael.TypeError, "must be an int"),
    ],
)  # fmt: skip
def test_broadcast_shapes_refuses_as_torch_does(shapes, error, message):
    with pytest.raises(error, match=message):
        kael.broadcast_shapes(*shapes)


@pytest.mark.parametrize(("source", "target"), itertools.product(DTYPE_NAMES, DTYPE_NAMES))
def test_can_cast_follows_torch_casting_table(source, target):
    expected = torch.can_cast(getattr(torch, source), getattr(torch, target))
    assert kael.can_cast(getattr(kael, source), getattr(kael, target)) is expected


RSUB_CASES = [
    ("float32", 3, 1),
    ("float32", 2.5, 2),
    ("int64", 7, 3),
    ("int64", 2.5, 1),
    ("int32", "tensor", 1),
    ("float64", "tensor", 0.5),
]


@pytest.mark.parametrize(("dtype", "other", "alpha"), RSUB_CASES)
def test_rsub_is_other_minus_alpha_input(dtype, other, alpha, like_torch):
    x = np.arange(-3, 3).reshape(2, 3)
    k_in, t_in = (
        kael.tensor(x, dtype=getattr(kael, dtype)),
        torch.tensor(x).to(getattr(torch, dtype)),
    )
    k_other, t_other = (
        (kael.tensor([1, 5, 9]), torch.tensor([1, 5, 9])) if other == "tensor" else (other, other)
    )
    like_torch(kael.rsub(k_in, k_other, alpha=alpha), torch.rsub(t_in, t_other, alpha=alpha))


def test_rsub_refuses_bool_tensors():
    b = kael.ones(2, dtype=kael.bool)
    with pytest.raises(kael.Error):
        kael.rsub(b, b)


UNRAVEL_CASES = [
    ([5, 1, 3], (2, 3)),
    ([[7], [11]], (2, 3, 2)),
    (3, 4),
    (3, (2, 2)),
    ([1234, 5678], (10, 10, 10, 10)),
    ([5, -1, -5], (2, 2)),  # torch wraps out-of-range indices by its formula
    ([0, 1], ()),
]


@pytest.mark.parametrize(("indices", "shape"), UNRAVEL_CASES)
@pytest.mark.parametrize("dtype", ["int64", "int32", "int16"])
def test_unravel_index_matches_torch(indices, shape, dtype, like_torch):
    k = kael.unravel_index(kael.tensor(indices, dtype=getattr(kael, dtype)), shape)
    t = torch.unravel_index(torch.tensor(indices, dtype=getattr(torch, dtype)), shape)
    assert isinstance(k, tuple) and len(k) == len(t)
    for a, b in zip(k, t, strict=True):
        assert a.dtype is kael.int64
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert a.shape == tuple(b.shape)


@pytest.mark.parametrize(
    ("indices", "shape", "error", "message"),
    [
        (kael.tensor([1.0]), (2, 2), kael.TypeError, "expected 'indices' to be integer dtype, but got float32"),
        (kael.tensor([True]), (2, 2), kael.TypeError, "integer dtype, but got bool"),
        (kael.tensor([1]), (2, -2), kael.ValueError, r"'shape' cannot have negative values, but got \(2, -2\)"),
        (kael.tensor([1]), (2, 2.0), kael.TypeError, "'shape' sequence to only contain ints"),
        (kael.tensor([1]), "ab", kael.TypeError, "'shape' to be int or sequence of ints"),
        (kael.tensor([1]), (0, 2), kael.Error, "ZeroDivisionError"),
    ],
)  # fmt: skip
def test_unravel_index_refuses_as_torch_does(indices, shape, error, message):
    with pytest.raises(error, match=message):
        kael.unravel_index(indices, shape)


def test_all_names_are_exported():
    names = ["concat", "concatenate", "clone", "numel", "is_tensor", "detach",
             "broadcast_shapes", "can_cast", "rsub", "unravel_index"]  # fmt: skip
    assert set(names) <= set(kael.__all__)
    assert all(TORCH_DTYPES)  # the table the dtype tests rely on


@pytest.mark.gpu
def test_unravel_index_and_kaiser_window_stay_on_cuda():
    # their 0-d constants are made where the result lives, not on the host
    flat = kael.tensor([5, 11, 0]).cuda()
    got = kael.unravel_index(flat, (3, 4))
    assert [t.device.type for t in got] == ["cuda", "cuda"]
    assert [t.cpu().tolist() for t in got] == [[1, 2, 0], [1, 3, 0]]
    window = kael.kaiser_window(8, device="cuda")
    assert window.device.type == "cuda"
    np.testing.assert_allclose(window.cpu().numpy(), torch.kaiser_window(8).numpy(), rtol=1e-5)
