"""The checks every family takes, over each family's table in family_cases: summaries, scores,
icdf, expand and sample shapes against torch's in both float dtypes, sample moments, and
results on the parameters' device."""

import pytest
from distribution_helpers import DTYPES, check_case_moments, check_family
from distributions.family_cases import params
from kernel_helpers import run_python


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", params("values"))
def test_values_match_torch_over_broadcast_and_scalar_params(case, dtype):
    check_family(case, dtype)


@pytest.mark.parametrize("case", params("moments"))
def test_sample_moments_match_torch(case):
    check_case_moments(case)


ON_THE_DEVICE = """
import numpy as np
import kael
import kael.distributions as D
from distribution_helpers import PROPERTIES
from distributions.family_cases import CASES

def cuda(value):
    return kael.tensor(value).to("cuda")

off, seen = [], set()
for case in CASES:
    if case.name in seen or not all(isinstance(v, np.ndarray) for v in case.args.values()):
        continue  # one case a family; Python-number parameters live on the default device
    seen.add(case.name)
    d = getattr(D, case.name)(**{k: cuda(v) for k, v in case.args.items()})
    got = {w: getattr(d, w) for w in PROPERTIES if w not in case.skip}
    got.update(sample=d.sample((2,)), expanded=d.expand((2, *d.batch_shape)).sample())
    if "entropy" not in case.skip:
        got["entropy"] = d.entropy()
    if case.value is not None:
        got.update({w: getattr(d, w)(cuda(case.value)) for w in case.scores})
    if case.icdf_at is not None:
        got["icdf"] = d.icdf(cuda(case.icdf_at))
    off += [(case.name, case.label, w) for w, t in got.items() if t.device.type != "cuda"]
print("off the device:", off)
"""


def test_every_result_stays_on_the_parameters_device():
    """Summaries, samples and scores of each family's parameters on (kael's emulated) CUDA
    device stay there."""
    assert "off the device: []" in run_python(ON_THE_DEVICE, KAEL_EMULATE_CUDA="1").stdout
