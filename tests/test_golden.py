"""Every golden case (golden/manifest.txt, written by golden/generate.py from PyTorch) replayed
through kael: one pytest item per case, named op/case.

The inputs' base tensors are loaded and their views re-applied by kael's own view code; the
result must match PyTorch's in shape, dtype and values (golden_tools.mismatch has the
tolerances), or, where PyTorch raised, kael must raise the matching typed kael error.
"""

import golden_tools as gt
import pytest

import kael

CASES = gt.read_manifest()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden_case_matches_pytorch(case: gt.Case) -> None:
    gt.check_case(case, kael)
