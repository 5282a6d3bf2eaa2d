"""Host kernels never run on device memory: the linalg names (factorizations.on_host),
searchsorted / bucketize / quantile and Tensor.new refuse operands on two devices with a
typed error naming both (as PyTorch refuses them), cuda-only operands give the CPU's values,
and the host kernels themselves (codegen/cpu) take their addresses through host_ptr, which
refuses cuda memory instead of letting a host kernel read it (a segfault).

The device calls run in one child interpreter (a regression would crash it, not pytest),
which prints one JSON line per case; the host-side unit tests of host_ptr need no device."""

import numpy as np
import pytest
import torch
from kernel_helpers import RECORD_CASES, assert_refused_naming, case_records, impl_of

import kael
from kael.runtime.device import CPU
from kael.runtime.errors import Error
from kael.runtime.tensor_impl import host_ptr, ptr_on

A = [[4.0, 1.0, 0.5], [1.0, 3.0, 1.0], [0.5, 1.0, 2.0]]  # symmetric positive definite
B = [[1.0, 2.0], [0.0, -1.0], [3.0, 0.5]]
SEQ = [1.0, 2.0, 4.0, 8.0]
VALUES = [[0.5, 2.0, 3.0], [4.0, 9.0, 8.0]]

SCRIPT = f"""
import json
import kael
from kael.codegen.cpu import gemm_run, search, triangular
from kael.runtime.tensor_impl import host_ptr

A = kael.tensor({A!r}, dtype=kael.float64)
B = kael.tensor({B!r}, dtype=kael.float64)
SEQ, VALUES = kael.tensor({SEQ!r}), kael.tensor({VALUES!r})
LU, PIV = kael.linalg.lu_factor(A)
L = kael.linalg.cholesky(A)
LD, LD_PIV = kael.linalg.ldl_factor(A)
QR, TAU = kael.geqrf(A)
c = lambda t: t.to("cuda")

CASES = {{
    # one operand on the other device: first or later argument, either device first
    "linalg.lu_solve B on the device": lambda: kael.linalg.lu_solve(LU, PIV, c(B)),
    "linalg.lu_solve LU on the host": lambda: kael.linalg.lu_solve(LU, c(PIV), c(B)),
    "lu_solve LU on the device": lambda: kael.lu_solve(B, c(LU), PIV),
    "lu_unpack pivots on the device": lambda: kael.lu_unpack(LU, c(PIV)),
    "linalg.solve B on the device": lambda: kael.linalg.solve(A, c(B)),
    "linalg.solve B on the host": lambda: kael.linalg.solve(c(A), B),
    "linalg.solve_triangular B on the device": lambda: kael.linalg.solve_triangular(
        A, c(B), upper=True
    ),
    "cholesky_solve L on the host": lambda: kael.cholesky_solve(c(B), L),
    "linalg.ldl_solve B on the device": lambda: kael.linalg.ldl_solve(LD, LD_PIV, c(B)),
    "linalg.householder_product tau on the device": lambda: (
        kael.linalg.householder_product(QR, c(TAU))
    ),
    "ormqr other on the device": lambda: kael.ormqr(QR, TAU, c(B)),
    "linalg.lstsq B on the device": lambda: kael.linalg.lstsq(A, c(B)).solution,
    "linalg.pinv B on the host": lambda: kael.linalg.pinv(c(A), atol=B),
    "linalg.inv out on the host": lambda: kael.linalg.inv(c(A), out=kael.empty(3, 3, dtype=A.dtype)),
    "linalg.inv out on the device": lambda: kael.linalg.inv(A, out=c(kael.empty(3, 3, dtype=A.dtype))),
    "linalg.inv into a device out": lambda: kael.linalg.inv(c(A), out=c(kael.zeros(3, 3, dtype=A.dtype))),
    "searchsorted values on the device": lambda: kael.searchsorted(SEQ, c(VALUES[0])),
    "searchsorted sequence on the device": lambda: kael.searchsorted(c(SEQ), VALUES[0]),
    "searchsorted sorter on the device": lambda: kael.searchsorted(
        SEQ, VALUES[0], sorter=c(kael.arange(4))
    ),
    "bucketize boundaries on the host": lambda: kael.bucketize(c(VALUES), SEQ),
    "quantile q on the device": lambda: kael.quantile(SEQ, c(kael.tensor([0.5]))),
    "masked_select mask on the device": lambda: kael.masked_select(SEQ, c(SEQ.gt(1))),
    "Tensor.new of a host tensor": lambda: c(SEQ).new(SEQ),
    # every operand on the device: the host's values, on the device
    "linalg.lu_solve": lambda: kael.linalg.lu_solve(c(LU), c(PIV), c(B)),
    "linalg.lu_solve adjoint": lambda: kael.linalg.lu_solve(c(LU), c(PIV), c(B), adjoint=True),
    "linalg.lu_solve left=False": lambda: kael.linalg.lu_solve(
        c(LU), c(PIV), c(B).mT.contiguous(), left=False
    ),
    "linalg.lu_solve transposed B": lambda: kael.linalg.lu_solve(c(LU), c(PIV), c(B.mT).mT),
    "linalg.lu_solve no columns": lambda: kael.linalg.lu_solve(c(LU), c(PIV), c(B[:, :0])),
    "lu_solve": lambda: kael.lu_solve(c(B), c(LU), c(PIV)),
    "linalg.solve": lambda: kael.linalg.solve(c(A), c(B)),
    "cholesky_solve": lambda: kael.cholesky_solve(c(B), c(L)),
    "searchsorted": lambda: kael.searchsorted(c(SEQ), c(VALUES)),
    "searchsorted right int32": lambda: kael.searchsorted(
        c(SEQ), c(VALUES), right=True, out_int32=True
    ),
    "searchsorted rows": lambda: kael.searchsorted(c(VALUES.sort(-1)[0]), c(VALUES)),
    "bucketize": lambda: kael.bucketize(c(VALUES), c(SEQ)),
    "masked_select": lambda: kael.masked_select(c(SEQ), c(SEQ.gt(1))),
    "linalg.pinv 0-d atol on the host": lambda: kael.linalg.pinv(
        c(A), atol=kael.tensor(0.1, dtype=kael.float64)
    ),
    # the host kernels given device memory
    "host_ptr of a device impl": lambda: host_ptr(c(A)._impl, "probe"),
    "triangular.permute": lambda: triangular.permute(c(B)._impl, PIV.to(kael.int64)._impl, 1),
    "gemm_run.matmul": lambda: gemm_run.matmul(
        kael.empty(3, 3, dtype=kael.float64)._impl, A._impl, c(A)._impl
    ),
    "search.run values on the host": lambda: search.run(
        c(SEQ)._impl, VALUES[0].contiguous()._impl, c(kael.empty(3, dtype=kael.int64))._impl,
        3, False,
    ),
}}

{RECORD_CASES}
"""

ERROR = "kael.runtime.errors.Error"
BOTH = r"expected all tensors on one device, but found (cpu and cuda:0|cuda:0 and cpu)"
# name -> (the error's class, a regex its message matches)
REFUSED = {
    "linalg.lu_solve B on the device": (ERROR, "lu_solve: " + BOTH),
    "linalg.lu_solve LU on the host": (ERROR, "lu_solve: " + BOTH),
    "lu_solve LU on the device": (ERROR, "lu_solve: " + BOTH),
    "lu_unpack pivots on the device": (ERROR, "lu_unpack: " + BOTH),
    "linalg.solve B on the device": (ERROR, "solve: " + BOTH),
    "linalg.solve B on the host": (ERROR, "solve: " + BOTH),
    "linalg.solve_triangular B on the device": (ERROR, "solve_triangular: " + BOTH),
    "cholesky_solve L on the host": (ERROR, "cholesky_solve: " + BOTH),
    "linalg.ldl_solve B on the device": (ERROR, "ldl_solve: " + BOTH),
    "linalg.householder_product tau on the device": (ERROR, "householder_product: " + BOTH),
    "ormqr other on the device": (ERROR, "ormqr: " + BOTH),
    "linalg.lstsq B on the device": (ERROR, "lstsq: " + BOTH),
    "linalg.pinv B on the host": (ERROR, "pinv: " + BOTH),
    "linalg.inv out on the host": (ERROR, "inv: out is on cpu but the operands are on cuda:0"),
    "linalg.inv out on the device": (ERROR, "inv: out is on cuda:0 but the operands are on cpu"),
    "searchsorted values on the device": (ERROR, "searchsorted: " + BOTH),
    "searchsorted sequence on the device": (ERROR, "searchsorted: " + BOTH),
    "searchsorted sorter on the device": (ERROR, "searchsorted: " + BOTH),
    "bucketize boundaries on the host": (ERROR, "bucketize: " + BOTH),
    "quantile q on the device": (
        ERROR,
        r"quantile\(\) q tensor must be on the same device as the input tensor \(q on cuda:0,"
        " input on cpu\\)",
    ),
    "masked_select mask on the device": (ERROR, "masked_select: " + BOTH),
    "Tensor.new of a host tensor": (
        "kael.runtime.errors.TypeError",
        r"new\(\): expected a float32 tensor on cuda:0 \(got a float32 tensor on cpu\)",
    ),
    "host_ptr of a device impl": (
        ERROR,
        "probe: host kernel given memory on cuda:0: expected all tensors on cpu",
    ),
    "triangular.permute": (ERROR, "kael_permute_rows_float64: host kernel given memory on cuda:0"),
    "gemm_run.matmul": (ERROR, "matmul: host kernel given memory on cuda:0"),
    "search.run values on the host": (
        ERROR,
        "kael_searchsorted_float32: cuda:0 kernel given memory on cpu: expected all tensors on "
        "cuda:0",
    ),
}


def _t(values, dtype=torch.float64) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


def _torch_lu() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.linalg.lu_factor(_t(A))


# name -> PyTorch's result on the CPU
EXPECTED = {
    "linalg.lu_solve": lambda: torch.linalg.lu_solve(*_torch_lu(), _t(B)),
    "linalg.lu_solve adjoint": lambda: torch.linalg.lu_solve(*_torch_lu(), _t(B), adjoint=True),
    "linalg.lu_solve left=False": lambda: torch.linalg.lu_solve(*_torch_lu(), _t(B).mT, left=False),
    "linalg.lu_solve transposed B": lambda: torch.linalg.lu_solve(*_torch_lu(), _t(B).mT.mT),
    "linalg.lu_solve no columns": lambda: torch.linalg.lu_solve(*_torch_lu(), _t(B)[:, :0]),
    "lu_solve": lambda: torch.lu_solve(_t(B), *_torch_lu()),
    "linalg.solve": lambda: torch.linalg.solve(_t(A), _t(B)),
    "cholesky_solve": lambda: torch.cholesky_solve(_t(B), torch.linalg.cholesky(_t(A))),
    "searchsorted": lambda: torch.searchsorted(_t(SEQ, None), _t(VALUES, None)),
    "searchsorted right int32": lambda: torch.searchsorted(
        _t(SEQ, None), _t(VALUES, None), right=True, out_int32=True
    ),
    "searchsorted rows": lambda: torch.searchsorted(_t(VALUES, None).sort(-1)[0], _t(VALUES, None)),
    "bucketize": lambda: torch.bucketize(_t(VALUES, None), _t(SEQ, None)),
    "masked_select": lambda: torch.masked_select(_t(SEQ, None), _t(SEQ, None).gt(1)),
    # a 0-d host tensor is a number beside cuda tensors, as PyTorch takes it
    "linalg.pinv 0-d atol on the host": lambda: torch.linalg.pinv(_t(A), atol=_t(0.1)),
    "linalg.inv into a device out": lambda: torch.linalg.inv(_t(A)),
}


@pytest.fixture(scope="module")
def results() -> dict:
    """Each case's record from the child interpreter, by name."""
    return case_records(SCRIPT)


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(REFUSED))
def test_operands_on_two_devices_raise_a_typed_error_naming_both(results, name):
    record = results[name]
    assert_refused_naming(record, *REFUSED[name])


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore:torch.lu_solve is deprecated")
@pytest.mark.parametrize("name", list(EXPECTED))
def test_device_operands_give_the_cpus_values_on_the_device(results, name):
    want = EXPECTED[name]()
    record = results[name]
    assert "error" not in record, record
    assert record["device"] == "cuda:0"
    assert record["dtype"] == str(want.dtype).removeprefix("torch.")
    got = np.array(record["values"], dtype=np.float64).reshape(want.shape)
    np.testing.assert_allclose(got, want.double().numpy(), rtol=1e-12, atol=1e-12)


# ---- host_ptr on host memory: no device needed ---------------------------------------------


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a,
        lambda a: a[1:, 2:],  # an offset into the storage
        lambda a: a.T,
        lambda a: a[0, 0, ...],  # 0-d
        lambda a: a[:0],  # empty
    ],
    ids=["contiguous", "sliced", "transposed", "0-d", "empty"],
)
def test_host_ptr_of_a_host_impl_is_its_data_ptr(view):
    impl = impl_of(view(np.arange(12.0).reshape(3, 4)))
    assert host_ptr(impl, "probe") == impl.data_ptr()
    assert ptr_on(impl, CPU, "probe") == impl.data_ptr()


def test_host_ptr_of_a_host_impl_is_the_address_of_its_first_element():
    array = np.arange(12.0).reshape(3, 4)
    impl = impl_of(array[1:, 2:])
    assert host_ptr(impl, "probe") == array.__array_interface__["data"][0] + 6 * 8


def test_a_device_kernel_refuses_host_memory_naming_both_devices():
    impl = impl_of(np.zeros(3, np.float32))
    with pytest.raises(Error, match="probe: cuda:0 kernel given memory on cpu"):
        ptr_on(impl, kael.device("cuda"), "probe")
