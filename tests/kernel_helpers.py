"""Test helpers: TensorImpls over NumPy arrays, so kernels can be tested below the frontend."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

import kael
from kael.runtime import dtypes
from kael.runtime.device import CPU
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl


def impl_of(arr: np.ndarray) -> TensorImpl:
    """A TensorImpl over the bytes of `arr` (any non-negative strides), keeping it alive."""
    base = arr
    while isinstance(base.base, np.ndarray):
        base = base.base
    dtype = dtypes.from_numpy_dtype(arr.dtype)
    item = arr.itemsize
    start = base.__array_interface__["data"][0]
    offset_bytes = arr.__array_interface__["data"][0] - start
    storage = Storage.external(start, base.nbytes, base, CPU)
    strides = tuple(s // item for s in arr.strides)
    impl = TensorImpl(storage, tuple(arr.shape), strides, offset_bytes // item, dtype, CPU)
    impl.validate()
    return impl


def empty_like_np(shape, dtype: np.dtype) -> tuple[np.ndarray, TensorImpl]:
    """A fresh array and an impl over it (the array is only the memory owner here)."""
    arr = np.empty(shape, dtype)
    return arr, impl_of(arr)


ROOT = Path(__file__).resolve().parents[1]


def run_python(script: str, **env: str) -> subprocess.CompletedProcess:
    """Run `script` in a fresh interpreter at the repo root, with tests/ importable; must exit 0."""
    prelude = f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
    res = subprocess.run(
        [sys.executable, "-c", prelude + script],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stderr
    return res


# kael's dtypes and PyTorch's, both ways, for tests that compare the two.
TORCH_DTYPES = {d: getattr(torch, d.name) for d in dtypes.ALL_DTYPES}
KAEL_DTYPES = {t: k for k, t in TORCH_DTYPES.items()}


def stable_argsort(rows: np.ndarray, descending: bool) -> np.ndarray:
    """Each row's stable order by NumPy, the sort kernels' reference: NaN last ascending and
    first descending, ties in input order both ways (descending sorts the reversed row)."""
    if not descending:
        return np.argsort(rows, axis=-1, kind="stable")
    n = rows.shape[-1]
    return n - 1 - np.argsort(rows[..., ::-1], axis=-1, kind="stable")[..., ::-1]


def tied_rows(dtype, rows: int, n: int, seed: int, order: str = "random"):
    """[rows, n] keys for the sort kernels' tests: few distinct values (integers in
    [-6, 6], many ties), with NaN, -0, infinities and half steps among the floats; in
    "random" order, or sorted "ascending" or "descending", or "constant" rows."""
    rng = np.random.default_rng(seed)
    values = rng.integers(-6, 7, (rows, n)).astype(np.float64)
    if dtype is kael.bool:
        values = (values > 0).astype(np.float64)
    elif dtype.is_floating_point:
        values += rng.integers(0, 2, (rows, n)) * 0.5
        for value, share in ((np.nan, 0.1), (-0.0, 0.1), (np.inf, 0.03), (-np.inf, 0.03)):
            values[rng.random((rows, n)) < share] = value
    elif dtype is kael.uint8:
        values += 6
    if order == "ascending":
        values = np.sort(values, axis=1)
    elif order == "descending":
        values = np.sort(values, axis=1)[:, ::-1].copy()
    elif order == "constant":
        values[:] = values[:, :1]
    return kael.tensor(values).to(dtype)


def assert_keys_at(values, keys, order: np.ndarray) -> None:
    """values (a kernel's sorted or picked keys) bit for bit keys' at `order` along the
    last dim: -0 and NaN payloads kept."""
    as_bits = {1: kael.uint8, 2: kael.int16, 4: kael.int32, 8: kael.int64}[keys.element_size()]
    want = np.take_along_axis(keys.view(as_bits).numpy(), order, axis=-1)
    np.testing.assert_array_equal(values.view(as_bits).numpy(), want)


def host_keys(x) -> np.ndarray:
    """A kael tensor's values as a NumPy array to order: bfloat16 as float32, which holds
    each of them exactly (NumPy has no bfloat16)."""
    return (x.to(dtypes.float32) if x.dtype is dtypes.bfloat16 else x).numpy()


# The end of a child-interpreter script that runs each of its CASES (name -> callable) and
# prints one JSON record a line: the error's class and message, or the result's device,
# dtype, shape and values (flat, as float64).
RECORD_CASES = """
for name, case in CASES.items():
    try:
        out = case()
    except Exception as e:
        record = {"error": type(e).__module__ + "." + type(e).__name__, "message": str(e)}
    else:
        record = {"device": str(out.device), "dtype": str(out.dtype), "shape": list(out.shape),
                  "values": out.cpu().to(kael.float64).reshape(-1).tolist()}
    print(json.dumps({"name": name, **record}), flush=True)
"""


def case_records(script: str) -> dict:
    """Each case's record (see RECORD_CASES) from `script` run in a child interpreter, by name."""
    lines = run_python(script).stdout.splitlines()
    return {r["name"]: r for r in (json.loads(line) for line in lines if line.startswith("{"))}


def assert_refused_naming(record: dict, kind: str, message: str) -> None:
    """A case's record is the error `kind` whose message matches `message`."""
    assert record.get("error") == kind, record
    assert re.search(message, record["message"]), record["message"]


def ahead_and_one_at_a_time(factor, monkeypatch):
    """(factor(), factor()) on two threads: first as kael runs it, launches taken along
    beside a matrix product (codegen/cpu/pair.py), then with every such pairing refused,
    so the same launches run one after another. No kept program (codegen/cpu/program.py)
    carries the first schedule over to the second."""
    from kael.codegen.cpu import gemm_run, pair, program

    saved = kael.get_num_threads()
    kael.set_num_threads(2)
    try:
        program.clear()
        ahead = factor()
        paired = gemm_run.adding_steps
        refused = []

        def one_at_a_time(into, c, a, b, subtract, alongside=()):
            refused.append(bool(alongside))  # the chain first, then the whole product
            return [*pair.in_order(alongside), *paired(into, c, a, b, subtract)]

        monkeypatch.setattr(gemm_run, "adding_steps", one_at_a_time)
        program.clear()
        alone = factor()
        assert any(refused)  # the factorization pairs launches: the comparison means something
        return ahead, alone
    finally:
        program.clear()
        kael.set_num_threads(saved)


def order_kernel():
    """A dense kernel whose argument words are (out, factor): out[item] = out[item] * factor
    + item + 1 for each work item, so the order of two launches on one slot shows."""
    from kael.codegen.cpu import dense

    def step(d, item) -> None:
        b = d.b
        at = b.gep(d.ptr("out"), [item])
        scaled = d.mul(b.load(at), b.sitofp(d.w["factor"], d.t))
        b.store(d.add(scaled, b.sitofp(b.add(item, d.i(1)), d.t)), at)

    name = "kael_test_order_step"
    words = ("out", "factor")
    return dense.kernel(name, lambda m: dense.per_matrix(m, name, kael.float64, words, step), name)
