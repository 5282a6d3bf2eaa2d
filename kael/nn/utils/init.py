"""torch.nn.utils.skip_init: a module built without running its parameters' initialization
where torch can skip it.

kael has no meta device to build a module on, so the module's own initialization runs;
torch's skip_init leaves the parameters uninitialized, which any values satisfy. The checks
and the final device are torch's."""

from __future__ import annotations

import inspect

from kael.runtime.errors import Error


def skip_init(module_cls: type, *args, **kwargs):
    """module_cls(*args, **kwargs) on kwargs' device (default the CPU), its parameters'
    values unspecified (here: its own initialization's); the class must take `device`."""
    from kael.nn.modules.module import Module  # kael.nn imports this package

    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise Error(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise Error("Module must support a 'device' arg to skip initialization")
    kwargs.setdefault("device", "cpu")
    return module_cls(*args, **kwargs)
