"""kael.nn.utils.skip_init against torch's: the module built on the asked device, and torch's
refusals."""

import pytest
import torch

import kael


def test_skip_init_builds_the_module_on_its_device_with_torchs_shapes():
    k = kael.nn.utils.skip_init(kael.nn.Linear, 3, 4, bias=False)
    t = torch.nn.utils.skip_init(torch.nn.Linear, 3, 4, bias=False)
    assert k.weight.shape == tuple(t.weight.shape) and k.bias is None and t.bias is None
    assert k.weight.device == kael.device("cpu")
    assert kael.nn.utils.skip_init(kael.nn.Conv2d, 2, 5, 3, device="cpu").weight.shape == (
        5,
        2,
        3,
        3,
    )


@pytest.mark.parametrize(
    ("cls", "message"),
    [(int, "Expected a Module; got <class 'int'>"), ("ReLU", "must support a 'device' arg")],
)
def test_skip_init_refuses_what_torchs_refuses(cls, message):
    for lib in (kael, torch):
        module_cls = getattr(lib.nn, cls) if isinstance(cls, str) else cls
        with pytest.raises(RuntimeError, match=message):
            lib.nn.utils.skip_init(module_cls)
