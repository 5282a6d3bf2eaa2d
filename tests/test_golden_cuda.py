"""Every golden case replayed with its inputs on the CUDA device (a GPU, or the emulated one
in every CI run: tests/runtime/emulator/test_gpu_suite.py): the same PyTorch values, dtypes,
shapes and typed errors as on the CPU."""

import golden_tools as gt
import pytest

import kael

pytestmark = pytest.mark.gpu
CASES = gt.read_manifest()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden_case_on_the_device_matches_pytorch(case: gt.Case) -> None:
    gt.check_case(case, kael, device="cuda")
