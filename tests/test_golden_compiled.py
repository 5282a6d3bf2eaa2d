"""Golden cases replayed under @kael.compile(fullgraph=True): each op's first CASES_PER_OP
cases (their views and dtypes) traced into a plan, run, then replayed from the plan on
fresh inputs, against PyTorch's outputs. Every op is one graph builder, so a compiled call
must give what the eager one gives (tests/test_golden.py) without a second trace.
"""

from collections import Counter

import golden_tools as gt
import pytest

import kael

CASES_PER_OP = 6
# Ops that hand Python a value computed from the data: a trace cannot hold it, so under
# fullgraph=True they raise kael.Error naming the line (fullgraph=False runs them eagerly).
PYTHON_VALUES = {"allclose", "equal", "item", "tensor"}


def _selected() -> list[gt.Case]:
    seen: Counter = Counter()
    chosen = []
    for case in gt.read_manifest():
        if case.error:
            continue
        seen[case.op] += 1
        if seen[case.op] <= CASES_PER_OP:
            chosen.append(case)
    return chosen


CASES = _selected()


def _inputs(case: gt.Case) -> list:
    loaded = gt.load_inputs(case, kael)
    return [loaded[name] for name in case.inputs]


def _compiled(case: gt.Case):
    adapter, args = gt.adapter_for(case.op), gt.decode_args(case.args)

    def call(*tensors):
        return adapter(kael, dict(zip(case.inputs, tensors)), args)

    return kael.compile(call, fullgraph=True)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden_case_compiles_and_replays_as_pytorch_computes_it(case: gt.Case) -> None:
    compiled = _compiled(case)
    if case.op in PYTHON_VALUES:
        with pytest.raises(kael.Error, match="needs a tensor's values"):
            compiled(*_inputs(case))
        return
    expected = gt.load_expected(case)
    for _ in range(2):  # the trace's own run, then the plan's replay
        gt.assert_matches(compiled(*_inputs(case)), expected)
    assert compiled.cache_info().traces == 1


def test_every_golden_op_is_replayed_compiled():
    assert {c.op for c in CASES} == {c.op for c in gt.read_manifest() if not c.error}
    assert {c.op for c in CASES} >= PYTHON_VALUES
