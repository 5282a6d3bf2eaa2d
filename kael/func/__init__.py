"""kael.func: torch.func's functional_call and vmap. kael has no autograd, so torch.func's
differentiating transforms (grad, vjp, jacrev, hessian) are not here."""

from kael.func.functional_call import functional_call
from kael.func.vmap import vmap

__all__ = ["functional_call", "vmap"]
