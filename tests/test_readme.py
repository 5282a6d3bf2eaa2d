"""Every Python example in README.md runs as written, in a fresh interpreter."""

import re

import pytest
from kernel_helpers import ROOT, run_python

EXAMPLES = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def test_readme_has_examples():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_readme_example_runs_as_written(index):
    run_python(EXAMPLES[index])
