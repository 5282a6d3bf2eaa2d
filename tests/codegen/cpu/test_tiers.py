"""Tiered CPU code (codegen/cpu/tiers.py): -O0 code first, optimized code once it is big.

The checks that need a kernel new to the machine run in a fresh interpreter with an
empty cache directory (this process's kernels, and the suite's disk cache, are warm).
"""

import json

from kernel_helpers import run_python

from kael.codegen.cpu import tiers

PRELUDE = """
import json
import kael
from kael.codegen.cpu import jit, tiers
from kael.frontend import eager
from kael.runtime import kernel_cache
from kael.runtime.launcher import PROMOTE_BYTES

def fn_of(name):
    '''The one linked elementwise kernel whose name starts with `name`.'''
    found = [c.fn for _, c in eager._specialized.values() if c is not None
             and c.kernel.name.startswith(name)]
    assert len(found) == 1, found
    return found[0]

def slot_value(fn):
    import ctypes
    return ctypes.c_void_p.from_address(fn.tier0.slots[fn.symbol]).value
"""


def _child(script: str, tmp_path, **env) -> dict:
    res = run_python(PRELUDE + script, KAEL_CACHE_DIR=str(tmp_path), **env)
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_trampolined_renames_each_kernel_and_calls_it_through_its_slot():
    text = (
        'define void @"kael_a"(i64* %x, i64 %b, i64 %e) {\n  ret void\n}\n'
        "define void @kael_ab(i64* %x, i64 %b, i64 %e) {\n"
        '  call void @"kael_a"(i64* %x, i64 %b, i64 %e)\n'
        "  call void @kael_a(i64* %x, i64 %b, i64 %e)\n  ret void\n}\n"
    )
    out = tiers.trampolined(text, ["kael_a"])
    assert '@"kael_a.tier0"(i64* %x' in out  # the body, and the calls inside the module
    assert out.count('@"kael_a.tier0"') == 4  # definition, two inner calls, the slot's value
    assert "@kael_a(" not in out
    assert "@kael_ab(" in out  # a longer name sharing the prefix is left alone
    assert '@"kael_a.slot" = global' in out
    assert 'define void @"kael_a"(' in out  # the trampoline under the kernel's own name


def test_small_launches_run_tier0_code_and_a_large_one_promotes_it(tmp_path):
    got = _child(
        """
x = kael.arange(100, dtype=kael.float32) / 10
first = x.exp()
fn = fn_of("exp")
tier0_target = slot_value(fn)
for _ in range(20):  # the fast door's remembered launches do not count
    again = x.exp()
small_stays = fn.tier0 is not None
tier = fn.tier0
big = kael.arange(PROMOTE_BYTES // 8, dtype=kael.float32) / 1e4   # in + out: PROMOTE_BYTES
big_out = big.exp()
after = x.exp()
print(json.dumps({
    "small_stays": small_stays, "promoted": fn.tier0 is None and tier.done,
    "retargeted": slot_value(type("F", (), {"tier0": tier, "symbol": fn.symbol})) != tier0_target,
    "same_bits": first.numpy().tobytes() == after.numpy().tobytes() == again.numpy().tobytes(),
    "big": big_out.numpy()[[0, 1, -1]].tolist(),
}))
""",
        tmp_path,
    )
    assert got["small_stays"] and got["promoted"] and got["retargeted"] and got["same_bits"]
    assert got["big"][0] == 1.0


def test_tier0_and_optimized_code_give_the_same_bits(tmp_path):
    script = """
from kael.codegen.cpu import handwritten
from kael.codegen.cpu import reduce as cpu_reduce
kael.manual_seed(3)
outs = []
for shape in ((7, 33), (3, 1001)):
    x = kael.randn(*shape)
    y = kael.randn(*shape) * 40
    outs += [x.exp(), x.tanh(), y.sin(), y.cos(), kael.nn.functional.gelu(x), x.sum(1),
             x.var(0), x.amax(1), x.cumsum(1), kael.softmax(x, -1), x.T.contiguous(),
             kael.randn(257), (x > 0).nonzero(), x[x > 0.5], x.log1p(), x.sigmoid()]
fns = [c.fn for _, c in eager._specialized.values() if c is not None]
fns += [r.main for r in cpu_reduce._memory._entries.values()]
fns += [f for lib in handwritten._libraries.values() for f in lib.functions.values()]
print(json.dumps({
    "bytes": [o.numpy().tobytes().hex() for o in outs],
    "tier0": sum(f.tier0 is not None for f in fns), "kernels": len(fns),
}))
"""
    tiered = _child(script, tmp_path / "tiered")
    optimized = _child(script, tmp_path / "optimized", KAEL_TIERS="0")
    # every kernel, reduction and hand-written library ran its -O0 code
    assert tiered["tier0"] == tiered["kernels"] > 20
    assert optimized["tier0"] == 0
    assert tiered["bytes"] == optimized["bytes"]


def test_counted_launches_promote_at_the_sixteenth(tmp_path):
    got = _child(
        """
from kael.codegen.cpu import handwritten
from kael.frontend.inspection import record_launches
x = kael.arange(10)
f, out = kael.ones(10) / 3, kael.empty(10)
sums, states, exps = set(), [], []
for _ in range(tiers.PROMOTE_LAUNCHES):
    sums.add(x.cumsum(0).tolist()[-1])
    lib = next(v for k, v in handwritten._libraries.items() if "cumsum" in k)
    states.append(next(iter(lib.functions.values())).tier0 is not None)
    record_launches(kael.exp, f, out=out)  # the full door (recorded): its launches count
    exps.append(fn_of("exp").tier0 is not None)
print(json.dumps({"states": states, "exps": exps, "sums": sorted(sums)}))
""",
        tmp_path,
    )
    # tier 0 for the first fifteen launches, optimized code from the sixteenth on
    assert got["states"] == got["exps"] == [True] * (tiers.PROMOTE_LAUNCHES - 1) + [False]
    assert got["sums"] == [45]


def test_a_kernel_first_launched_large_is_compiled_optimized_only(tmp_path):
    got = _child(
        """
from kael.codegen.cpu import compiler
builds = []
real = compiler.emit_tier0
compiler.emit_tier0 = lambda text, *a, **k: builds.append(text) or real(text, *a, **k)
ones = kael.ones(PROMOTE_BYTES // 8)
big = ones * 3
fn = fn_of("mul")
print(json.dumps({"tier0": fn.tier0 is not None, "value": big.numpy()[-1].item(),
                  "mul_tier0_builds": sum(fn.symbol in text for text in builds)}))
""",
        tmp_path,
    )
    # (the fast door's fill entry is made from a 64-element probe ahead of the first
    # fill, so kael.ones itself builds its tier 0 first)
    assert got == {"tier0": False, "value": 3.0, "mul_tier0_builds": 0}


def test_a_new_process_links_the_optimized_object_the_disk_has(tmp_path):
    promote = """
big = kael.ones(PROMOTE_BYTES // 8)
small = kael.ones(8)
(small + 1, big + 1)
print(json.dumps({"tier0": fn_of("add").tier0 is not None}))
"""
    assert _child(promote, tmp_path) == {"tier0": False}
    reuse = """
small = kael.ones(8)
y = small + 1
print(json.dumps({"tier0": fn_of("add").tier0 is not None, "y": y.tolist(),
                  "compiled": kernel_cache.stats["compiled"]}))
"""
    got = _child(reuse, tmp_path)
    assert got == {"tier0": False, "y": [2.0] * 8, "compiled": 0}


def test_a_corrupt_tier0_entry_is_rebuilt(tmp_path):
    first = """
y = kael.ones(8) * 5
fn = fn_of("mul")
_, key = jit.cache_key(fn.kernel)
print(json.dumps({"path": str(kernel_cache._path("cpu", tiers.tier0_key(key))),
                  "tier0": fn.tier0 is not None}))
"""
    got = _child(first, tmp_path)
    assert got["tier0"]
    with open(got["path"], "r+b") as f:
        f.seek(100)
        f.write(b"\xff" * 64)
    again = """
y = kael.ones(8) * 5
print(json.dumps({"y": y.tolist(), "compiled": kernel_cache.stats["compiled"]}))
"""
    assert _child(again, tmp_path) == {"y": [5.0] * 8, "compiled": 1}


def test_compiled_plans_and_concurrent_promotion(tmp_path):
    got = _child(
        """
import threading

from kael.codegen.cpu import compiler

@kael.compile
def f(x):
    return (x * 2).tanh()

@kael.compile
def g(x):
    return (x * 3).exp().sum(-1)

x = kael.ones(16)
builds = []
real = compiler.emit_tier0
compiler.emit_tier0 = lambda text, *a, **k: builds.append(text) or real(text, *a, **k)
f(x)
g(kael.ones(4, 16))
plan_tier0_builds = len(builds)
compiler.emit_tier0 = real
plan_fn = fn_of("mul_tanh")
x = kael.ones(64) / 3
small = x.sin()
fn = fn_of("sin")
was_tier0 = fn.tier0 is not None
big = kael.ones(PROMOTE_BYTES // 8) / 3
results, smalls = [], []
def run():
    results.append(big.sin().numpy()[[0, -1]].tolist())
def small_loop():  # through the trampoline while its slot is written
    for _ in range(300):
        smalls.append(x.sin().numpy()[0].item())
threads = [threading.Thread(target=small_loop) for _ in range(2)]
threads += [threading.Thread(target=run) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"plan_tier0": plan_fn.tier0 is not None, "was_tier0": was_tier0,
                  "plan_tier0_builds": plan_tier0_builds,
                  "promoted": fn.tier0 is None, "results": results,
                  "small": small.numpy()[0].item(), "after": x.sin().numpy()[0].item(),
                  "smalls": sorted(set(smalls))}))
""",
        tmp_path,
    )
    assert not got["plan_tier0"]  # a compiled plan runs optimized code from its first call
    assert got["plan_tier0_builds"] == 0  # ... and builds none at tier 0 first
    assert got["was_tier0"] and got["promoted"]
    assert len(got["results"]) == 4 and len({tuple(r) for r in got["results"]}) == 1
    assert got["small"] == got["after"]
    assert got["smalls"] == [got["small"]]  # 600 calls, before, during and after promotion


def test_a_forked_child_promotes_its_own_way(tmp_path):
    got = _child(
        """
import os
x = kael.ones(64) / 7
y = x.cos()
fn = fn_of("cos")
before = fn.tier0 is not None
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    big = kael.ones(PROMOTE_BYTES // 8) / 7
    ok = big.cos().numpy()[0] == y.numpy()[0] and fn.tier0 is None
    os.write(w, b"1" if ok else b"0")
    os._exit(0)
os.waitpid(pid, 0)
print(json.dumps({"before": before, "child": os.read(r, 1).decode(),
                  "parent_still_tier0": fn.tier0 is not None}))
""",
        tmp_path,
    )
    assert got == {"before": True, "child": "1", "parent_still_tier0": True}


def test_a_prepared_launch_asked_optimized_promotes_code_eager_linked_at_tier0(tmp_path):
    # An eager call links the kernel at tier 0; a compiled plan preparing the same
    # specialized launch (optimized=True) gets it promoted, not its tier-0 code.
    got = _child(
        """
x = kael.ones(16)
kael.exp(x)
before = fn_of("exp").tier0 is not None
[template] = [t for k, t in eager._templates.items() if k[:2] == ("unary", "exp")]
out = kael.empty(16)
prepared = eager.prepare(template, [out._impl], [x._impl], optimized=True)
print(json.dumps({"before": before, "same": prepared.fn is fn_of("exp"),
                  "after": prepared.fn.tier0 is None}))
""",
        tmp_path,
    )
    assert got == {"before": True, "same": True, "after": True}
