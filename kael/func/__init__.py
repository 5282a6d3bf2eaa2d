"""kael.func: torch.func's functional_call, stack_module_state and vmap. kael has no
autograd, so torch.func's differentiating transforms (grad, vjp, jacrev, hessian) are not
here."""

from kael.func.ensembling import stack_module_state
from kael.func.functional_call import functional_call
from kael.func.vmap import vmap

__all__ = ["functional_call", "stack_module_state", "vmap"]
