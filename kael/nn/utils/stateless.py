"""torch.nn.utils.stateless: functional_call's older home (kael.func.functional_call)."""

from kael.func import functional_call

__all__ = ["functional_call"]
