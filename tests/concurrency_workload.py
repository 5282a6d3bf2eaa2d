"""The first calls of every op family, as a table of named cases, for the thread stress test.

`python tests/concurrency_workload.py THREADS OUT.npz` runs every case on THREADS Python
threads at once (all threads start each case together, the GIL switching every
microsecond) in a fresh process, where every template, plan and kernel is built on first use, and saves
each thread's results. tests/frontend/test_concurrency.py compares them with a run on
one thread: any cache that two threads can fill at once shows up as a wrong value.
"""

from __future__ import annotations

import random
import sys
import threading

import numpy as np

import kael

F32, F64, I64, B = kael.float32, kael.float64, kael.int64, kael.bool
DTYPES = (F32, F64, I64, B)


def data(shape, dtype, seed: int) -> kael.Tensor:
    """Deterministic values of `dtype`: small ints (no zero divisors), signed floats."""
    rng = np.random.default_rng(seed)
    if dtype is B:
        return kael.from_numpy(rng.random(shape) > 0.5)
    if dtype is I64:
        return kael.from_numpy(rng.integers(1, 9, shape).astype(np.int64))
    arr = rng.standard_normal(shape) * 2
    return kael.from_numpy(arr.astype(np.float32 if dtype is F32 else np.float64))


def _binary(name: str, a, b):
    return lambda: getattr(kael, name)(data((33, 17), a, 1), data((17,), b, 2))


def _unary(name: str, dtype):
    return lambda: getattr(kael, name)(data((9, 40), dtype, 3).abs() + 0.5)


def _inplace(method: str, dtype):
    def run():
        x = data((16, 24), dtype, 4)
        getattr(x, method)(data((24,), dtype, 5))
        return x

    return run


def _reduce(name: str, dtype, **kw):
    return lambda: getattr(data((31, 65), dtype, 6), name)(**kw)


def _matmul(dtype, m: int, k: int, n: int):
    return lambda: data((m, k), dtype, 7) @ data((k, n), dtype, 8)


def _convert(src, dst):
    return lambda: data((7, 300), src, 9).T.to(dst)


def _setitem():
    x = data((6, 10), F32, 10)
    x[kael.tensor([0, 3]), 2:] = 4.5
    x[x > 1.0] = -1.0
    return x


def _scatter_add():
    index = kael.tensor([[0, 1, 2, 0], [2, 2, 1, 0]])
    return kael.zeros(3, 4).scatter_add(0, index, data((2, 4), F32, 11))


CASES = {
    **{
        f"{op}_{a}_{b}": _binary(op, a, b)
        for op in ("add", "mul", "maximum", "eq", "lt", "logical_and", "logical_xor")
        for a, b in ((F32, F32), (F64, I64), (I64, I64), (B, F32), (I64, B))
    },
    **{
        f"{op}_{d}": _binary(op, d, d)
        for op in ("div", "floor_divide", "remainder", "pow")
        for d in (F32, F64, I64)
    },
    **{
        f"{op}_{d}": _unary(op, d)
        for op in ("exp", "log", "sin", "tanh", "sigmoid", "sqrt", "erf", "expm1", "neg", "floor")
        for d in (F32, F64)
    },
    **{f"{m}_{d}": _inplace(m, d) for m in ("add_", "mul_", "sub_") for d in (F32, F64, I64)},
    **{
        f"{op}_{d}_{dims}": _reduce(op, d, **({"dim": dims} if dims is not None else {}))
        for op in ("sum", "amax", "argmax", "prod")
        for d in (F32, F64, I64)
        for dims in (None, 0, 1)
    },
    **{
        f"{op}_{d}_dim1": _reduce(op, d, dim=1)
        for op in ("mean", "var", "std", "norm")
        for d in (F32, F64)
    },
    **{f"{op}_{d}": _reduce(op, B) for op, d in (("any", B), ("all", B))},
    **{
        f"matmul_{d}_{m}x{k}x{n}": _matmul(d, m, k, n)
        for d in (F32, F64, I64)
        for m, k, n in ((24, 70, 33), (1, 40, 9), (50, 30, 1))
    },
    **{f"to_{s}_{d}": _convert(s, d) for s in DTYPES for d in DTYPES if s is not d},
    "cumsum_f32": lambda: kael.cumsum(data((20, 30), F32, 12), 1),
    "cumprod_i64": lambda: kael.cumprod(data((20, 30), I64, 13), 0),
    "flip": lambda: kael.flip(data((5, 6, 7), F64, 14), (0, 2)),
    "roll": lambda: kael.roll(data((5, 6), I64, 15), (2, -1), (0, 1)),
    "tril": lambda: kael.tril(data((8, 9), F32, 16), -1),
    "sort": lambda: kael.sort(data((7, 30), F32, 17), dim=1)[0],
    "topk": lambda: kael.topk(data((7, 30), F64, 18), 5)[1],
    "softmax": lambda: kael.softmax(data((12, 50), F32, 19), -1),
    "log_softmax_t": lambda: kael.log_softmax(data((12, 50), F64, 20).T, -1),
    "logsumexp": lambda: kael.logsumexp(data((12, 50), F32, 21), 1),
    "cross_entropy": lambda: kael.cross_entropy(
        data((6, 5), F32, 22), kael.tensor([0, 4, 1, 1, 3, 2])
    ),
    "layer_norm": lambda: kael.layer_norm(data((6, 32), F64, 23), (32,)),
    "gather": lambda: kael.gather(
        data((4, 5), F32, 24), 1, kael.tensor([[0, 4], [1, 1], [3, 2], [0, 0]])
    ),
    "index_select": lambda: kael.index_select(data((6, 5), I64, 25), 0, kael.tensor([5, 0, 2])),
    "scatter_add": _scatter_add,
    "getitem_advanced": lambda: data((6, 7, 8), F32, 26)[
        kael.tensor([1, 0]), :, kael.tensor([3, 7])
    ],
    "getitem_mask": lambda: data((6, 7), F64, 27)[data((6, 7), B, 28)],
    "setitem": _setitem,
    "nonzero": lambda: kael.nonzero(data((9, 11), B, 29)),
    "cat": lambda: kael.cat([data((2, 3), F32, 30), data((4, 3), F32, 31)]),
    "stack": lambda: kael.stack([data((2, 3), I64, 32), data((2, 3), I64, 33)], 1),
    "where": lambda: kael.where(data((5, 6), B, 34), data((5, 6), F32, 35), 2.0),
    "masked_fill": lambda: kael.masked_fill(data((5, 6), I64, 36), data((5, 6), B, 37), -3),
    "arange_f64": lambda: kael.arange(0.5, 40.0, 0.25, dtype=F64),
    "linspace": lambda: kael.linspace(-1.0, 3.0, 77),
    "eye": lambda: kael.eye(9, 7, dtype=I64),
    "full": lambda: kael.full((3, 70), 2.5, dtype=F64),
    "contiguous_t": lambda: data((45, 37), F32, 38).T.contiguous(),
    "clamp": lambda: kael.clamp(data((40,), F64, 39), -0.5, 0.5),
    "round": lambda: kael.round(data((40,), F32, 40) * 10),
    # Large enough for the thread pool: several Python threads share its workers.
    "pool_add": lambda: data((512, 1024), F32, 41) + data((1024,), F32, 42),
    "pool_sum": lambda: data((512, 1024), F64, 43).sum(0),
    "pool_matmul": lambda: data((200, 160), F32, 44) @ data((160, 210), F32, 45),
}


def main(threads: int, out: str) -> None:
    sys.setswitchinterval(1e-6)
    order = list(CASES)
    random.Random(threads).shuffle(order)
    results: list[dict[str, np.ndarray]] = [{} for _ in range(threads)]
    errors: list[BaseException] = []
    step = threading.Barrier(threads)

    def worker(i: int) -> None:
        for name in order:
            step.wait()  # every thread makes this case's first call at the same moment
            try:
                results[i][name] = np.array(CASES[name]().numpy(), copy=True)
            except BaseException as e:  # re-raised below, after every thread has finished
                errors.append(e)

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if errors:
        raise errors[0]
    np.savez(out, **{f"{i}/{name}": arr for i, r in enumerate(results) for name, arr in r.items()})


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
