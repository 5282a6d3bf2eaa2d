"""kael/frontend/dlpack.py's export table at interpreter exit."""

from kernel_helpers import run_python


def test_a_consumer_may_release_an_export_after_the_module_is_torn_down():
    """At exit, modules' names are cleared in no set order: a torch tensor over a kael
    export, still held, may call kael's deleter (and read its DLManagedTensor) after the
    export table and the deleter's ctypes callback lost their module's references. The
    exit handler keeps them: the release then runs cleanly (it crashed the process in the
    exit's garbage collection)."""
    script = """
import gc
import torch
import kael
from kael.frontend import dlpack
held = [torch.from_dlpack(kael.arange(6.0)), torch.utils.dlpack.from_dlpack(kael.ones(3).__dlpack__())]
unused = kael.ones(2).__dlpack__()  # a capsule never consumed: its destructor releases it
assert float(held[0].sum()) == 15.0
dlpack._outlive_shutdown()  # what the exit runs first (atexit)
dlpack.__dict__.clear()  # then the teardown drops the module's names
gc.collect()
del held, unused  # the consumers let go last: kael's deleters and destructor run
gc.collect()
print("released")
"""
    done = run_python(script)
    assert done.stdout.strip() == "released"
    assert done.stderr == ""  # each release ran (a NameError in a callback only prints)
