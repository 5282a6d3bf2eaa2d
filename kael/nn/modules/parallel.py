"""DataParallel: torch's wrapper that splits a batch across GPUs. kael drives one device, so
it runs the module as it is; what it keeps is torch's shape of the wrapper, `module` as
its one child, so checkpoints saved from one (keys "module.*") load as they were saved."""

from __future__ import annotations

from kael.nn.modules.module import Module


class DataParallel(Module):
    """`module` run on the whole batch (kael has one device to spread it over)."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device, self.dim = output_device, dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
