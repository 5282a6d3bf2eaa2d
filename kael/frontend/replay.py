"""A plan's steady-state call as straight-line Python, generated once per thread count.

Plan.run interprets its steps: per call it builds a Call, walks the schedule, asks each
step for its prepared launch, patches argument blocks operand by operand, and frees
intermediates from a release table. For a small plan that interpretation is most of the
call (a one-kernel plan on 4096 floats: ~4 us of Python beside 2 us of kernel). Once
every step is prepared, everything but the storages' addresses and the float arguments
is fixed, so `build` writes the call out as one Python function (JAX and tinygrad replay
a captured graph the same way): each block copied from its template and the addresses
stored into their words, the kernels called directly (inline or on the pool, decided
here once), intermediates dropped where their last reader ran, the results built. Small
intermediates that never leave the replay (a norm, a packing scratch: at most POOL_BYTES
together) are kept with it between calls instead: an allocation and a release per call
cost more than their kernels (power iteration's call 6.0 -> 5.3 us).

Prepared elementwise kernels, reductions without scratch, row groups and aliases are
written out; any other step (a matrix product, an extern, a reservation of random
counters, a launch with scratch) is called as in Plan.run, on a Call holding the
storages it reads, and the storages it makes are taken back from it. The function is
valid for the thread count it was built at and while no launch is watched
(kael.explain, KAEL_DEBUG): Plan.run checks both before calling it.
"""

from __future__ import annotations

import array
from collections.abc import Callable
from dataclasses import dataclass

from kael.codegen.cpu import gemm_run, native_launch
from kael.codegen.cpu.native_launch import describe
from kael.frontend import eager, guard, pytree
from kael.runtime.device import CPU
from kael.runtime.launcher import inline, run_block
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl


@dataclass(frozen=True, slots=True)
class Replay:
    """A plan's call written out for `threads` threads: fn(plan, tensors, scalars) ->
    results (build's), or fn(args) -> results or guard.MISS (build_guarded's)."""

    threads: int
    fn: Callable
    source: str
    kept_bytes: int = 0  # of the intermediates each pool entry holds between calls
    pool: tuple = ((), None)  # (bytes of each kept storage, the list of kept entries)


class _Writer:
    """The generated function's lines and the constants they name."""

    def __init__(self, plan, threads: int, guarded: bool = False) -> None:
        from kael.frontend import plan as p
        from kael.frontend.plan_matmul import MatmulCall  # both import this module

        self.p = p
        self.MatmulCall = MatmulCall
        self.plan = plan
        self.threads = threads
        self.guarded = guarded  # the arguments' storages and tensors bound by a guard
        self.lines: list[str] = []
        self.names: dict[str, object] = {
            "_word": eager.param_word,
            "_run_block": run_block,
            "_impl": TensorImpl.of_tuples,
            "_trusted": p._trusted,
            "_array": array.array,
            "_launch": native_launch.launcher(),
        }
        self.made: set[int] = set()  # slots whose storage is bound to a local already
        self.kept: set[int] = set()  # intermediates taken from the replay's pool (write)
        self.pool_room = POOL_BYTES  # bytes a pool entry may still take for scratch
        self.pool_sizes: list[int] = []  # bytes of each storage of a pool entry
        self.aliases = {a.dst: a.src for a in plan.steps if type(a) is p.Alias}
        self.position = {  # of each product: `apart` asks what externs ran before it
            id(step): i for i, step in enumerate(plan.steps) if type(step) is MatmulCall
        }
        self.given: dict[int, int] = {}  # slot (a root) -> the first extern step given it
        for i, step in enumerate(plan.steps):
            if type(step) is p.ExternCall:
                for v in p.leaf_views(step.leaves):
                    self.given.setdefault(self.root(v.buffer), i)

    def constant(self, prefix: str, value) -> str:
        name = f"{prefix}{len(self.names)}"
        self.names[name] = value
        return name

    def storage(self, slot: int) -> str:
        """The local holding slot `slot`'s storage, bound at its first use."""
        name = f"s{slot}"
        if slot not in self.made:
            self.made.add(slot)
            s = self.plan.slots[slot]
            if s.kind == self.p.ARG and s.origin is not None:  # found at any offset
                tensor = f"t{s.arg}" if self.guarded else f"tensors[{s.arg}]"
                self.lines.append(
                    f"{name} = {self.constant('At', self.p.at)}({tensor}._impl, {s.origin})"
                )
            elif s.kind == self.p.ARG and self.guarded:
                self.lines.append(f"{name} = st{s.arg}")
            elif s.kind == self.p.ARG:
                self.lines.append(f"{name} = tensors[{s.arg}]._impl.storage")
            elif s.kind == self.p.IMPLICIT:
                self.lines.append(f"{name} = {self.constant('S', s.storage)}")
            elif slot in self.kept:
                self.lines.append(f"{name} = {self.pooled(s.nbytes)}")
            elif s.kind == self.p.FRESH and s.nbytes == 0:
                self.lines.append(f"{name} = {self.constant('E', s.new_storage)}()")
            elif s.kind == self.p.FRESH:  # Storage.planned called here: one frame fewer
                args = ", ".join(self.constant("C", v) for v in s.planned())
                self.lines.append(f"{name} = {self.constant('P', Storage.planned)}({args})")
            else:  # an extern's result, bound by the step that made it
                raise AssertionError(f"slot {slot} ({s.kind}) read before its step ran")
        return name

    def pooled(self, nbytes: int) -> str:
        """An expression for one more host storage of `nbytes` kept with the replay."""
        self.pool_sizes.append(nbytes)
        return f"pool[{len(self.pool_sizes) - 1}]"

    def scratch(self, nbytes: int) -> str:
        """An expression for a product's packing scratch: kept with the replay while the
        pool entry stays within POOL_BYTES, else a new storage per call."""
        if nbytes <= self.pool_room:  # what the kept slots left of POOL_BYTES
            self.pool_room -= nbytes
            return self.pooled(nbytes)
        return f"{self.constant('H', Storage.host)}({nbytes})"

    def value(self, source) -> str:
        """An expression for a parameter or constant result."""
        kind = type(source)
        if kind is self.p.ArgScalar or kind is self.p.Derived:
            return f"{self.constant('A', source)}.of(scalars)"
        if kind is self.p.RandomWord:  # the counters a Reserve step put on the call
            return f"{self.constant('R', source)}.value(call)"
        return self.constant("K", source)

    def words(self, step, end: int, local=(), start: int = 0, shifts=None) -> list[tuple[int, str]]:
        """(position, expression) of each word a call of `step` supplies in its words
        [start, end) of a block: the operands' addresses, each moved by `shifts` bytes (a
        slice's), but `local` slots' (which a row driver stores), then its run-time
        parameters."""
        out = []
        for i, (slot, offset) in enumerate(step.pointers):
            if slot not in local:
                moved = offset + (shifts[i] if shifts else 0)
                address = f"{self.storage(slot)}.ptr" + (f" + {moved}" if moved else "")
                out.append((start + i, address))
        at = end - len(step.param_words)
        for k, source, dtype in step.dynamic or ():
            out.append((at + k, f"_word({self.value(source)}, {self.constant('D', dtype)})"))
        return out

    def call(self, fn, template, words, total: int, moved: int, align: int, per_item: int):
        """Lines launching `fn` over `template` with `words` ((position, expression)): one
        native launch where it runs inline (native_launch: no block copied in Python),
        else the block copied, patched and launched."""
        if total <= 0:
            return
        described = None
        if inline(moved, self.threads):
            described = describe(fn, template, [p for p, _ in words], per_item)
        if described is None:
            self.launch(fn, self.block(template, words), total, moved, align)
            return
        self.constant("N", described)  # kept alive by the function's globals
        args = [str(described.address), str(total), *(w for _, w in words)]
        self.lines.append(f"_launch({', '.join(args)})")

    def block(self, template: array.array, words) -> str:
        """Lines that copy `template` and store `words` ((position, expression)) into it;
        the block's local name."""
        name = f"b{len(self.lines)}"
        self.lines.append(f"{name} = {self.constant('T', template)}[:]")
        self.lines += [f"{name}[{position}] = {word}" for position, word in words]
        return name

    def launch(self, fn, block: str, total: int, moved: int, align: int) -> None:
        if total <= 0:
            return
        f = self.constant("F", fn)
        if inline(moved, self.threads):
            self.lines.append(f"{f}({block}.buffer_info()[0], 0, {total})")
        else:
            self.lines.append(f"_run_block({f}, {block}, {total}, {moved}, {align})")

    def ready(self, step):
        """What `step` is written out from (its prepared launch, read once: another thread
        may prepare it anew meanwhile), or None: the replay calls its run on a Call."""
        p = self.p
        kind = type(step)
        if kind is p.Alias:
            return step
        if kind is p.KernelCall:
            threads, prepared, template = step.prepared or (None, None, None)
            ok = threads == self.threads and prepared is not None and template is not None
            return (prepared, template) if ok else None
        if kind is p.RowGroup:
            threads, ready = step.prepared or (None, None)
            return ready if threads == self.threads and ready is not None else None
        if kind is self.MatmulCall:
            threads, gp, blocks, _, apart = step.prepared or (None,) * 5
            if threads != self.threads:
                return None
            if step.epilogue is None:
                return gp, None
            at = self.position[id(step)]
            if blocks is None or not all(self.apart(o, a, at) for o, a in apart):
                return None  # the epilogue after the product, or a call's overlap check
            return gp, blocks
        return None  # an extern, a reservation of counters

    def kernel(self, step, ready) -> None:
        prepared, template = ready
        per_item = prepared.moved // max(1, prepared.total)
        words = self.words(step, len(template))
        self.call(prepared.fn, template, words, prepared.total, prepared.moved, prepared.align,
                  per_item)  # fmt: skip

    def root(self, slot: int) -> int:
        """The slot whose storage `slot` has, aliases followed back."""
        while slot in self.aliases:
            slot = self.aliases[slot]
        return slot

    def apart(self, out: int, operand: int, at: int) -> bool:
        """Whether slots `out` and `operand` of step `at` can never share memory: their
        storages come from different slots (aliases followed back) and one is fresh memory
        of the call's own that no extern before the step was given, or, without an
        extern's result, fresh at all (arguments and implicit inputs may be one array under
        two slots, and an extern may return a new storage over memory it was given:
        MatmulCall's check per call). An extern reaches a call's memory only through the
        tensors among its leaves: one inside an object the pytree keeps whole is a
        constant of the trace, never a slot."""
        roots = [self.root(out), self.root(operand)]
        if roots[0] == roots[1]:
            return False
        kinds = [self.plan.slots[r].kind for r in roots]
        fresh = [r for r, kind in zip(roots, kinds) if kind == self.p.FRESH]
        if self.p.EXTERN in kinds:
            return any(self.given.get(r, at) >= at for r in fresh)
        return bool(fresh)

    def product(self, step, ready) -> None:
        """A matrix product's launches (gemm_run.run written out): packing scratch, then
        each launch's words with the operands' addresses patched in, and an epilogue's
        blocks (their address and stride in the launch's `epi` words)."""
        gp, blocks = ready
        bases = [
            f"{self.storage(v.buffer)}.ptr"
            + (f" + {v.offset * v.dtype.itemsize}" if v.offset else "")
            for v in (step.a, step.b, step.c)
        ]
        if gp.buffer_bytes:
            bases.append(f"{self.scratch(gp.buffer_bytes)}.ptr")
        else:
            bases.append("0")
        for i, launch in enumerate(gp.launches):
            words = [
                (index, bases[which] + (f" + {offset}" if offset else ""))
                for index, which, offset in launch.slots
            ]
            if blocks is not None and blocks[i] is not None:  # the epilogue's blocks
                epi, patches = step.epilogue, blocks[i].patches
                patched = [
                    word
                    for start, end, shifts in patches
                    for word in self.words(epi, end, (), start, shifts)
                ]
                built = self.block(blocks[i].template, patched)
                at = gemm_run.EPI[launch.name]
                words += [(at, f"{built}.buffer_info()[0]"), (at + 1, str(blocks[i].stride))]
            flops = launch.flops // max(1, launch.total)  # the GIL released from 64K flops
            template = array.array("q", launch.words)
            self.call(launch.fn, template, words, launch.total, launch.moved, 1, flops)

    def row_group(self, group, ready) -> None:
        from kael.codegen.cpu import rowdriver

        members, moved = ready
        records = group.records(members, group.local)
        words, starts = rowdriver.words(
            group.chunk, group.rows, group.scratch_bytes, [r for _, r in records]
        )
        patched = [
            (start + position, word)
            for (m, (_, template, _, _)), start in zip(records, starts)
            for position, word in self.words(m, len(template), group.local)
        ]
        chunks = -(-group.rows // group.chunk)
        template = array.array("q", words)
        self.call(rowdriver.driver(), template, patched, chunks, moved, 1, moved // chunks)

    def result(self, leaf) -> str:
        p = self.p
        if type(leaf) is p.View:
            device = self.plan.slots[leaf.buffer].device
            parts = (leaf.shape, leaf.strides, leaf.offset, leaf.dtype, device)
            args = ", ".join(self.constant("L", v) for v in parts)
            impl = f"_impl({self.storage(leaf.buffer)}, {args})"
            slot = self.plan.slots[leaf.buffer]
            if slot.kind == p.WINDOW or slot.origin is not None:
                impl = f"{self.constant('W', p.unwindowed)}({impl})"
            return f"_trusted({impl})"
        if type(leaf) is p.Input:
            return f"t{leaf.index}" if self.guarded else f"tensors[{leaf.index}]"
        return self.value(leaf)

    def delegated(self, step) -> None:
        """`step.run(call)`, the storages it reads bound on the call first and those it
        made (fresh outputs, an extern's results) taken back after."""
        slots = sorted({v.buffer for v in step.views()})
        for slot in slots:
            kind = self.plan.slots[slot].kind
            if slot in self.made or kind in (self.p.ARG, self.p.IMPLICIT):
                self.lines.append(f"bound[{slot}] = {self.storage(slot)}")
        self.lines.append(f"{self.constant('X', step)}.run(call)")
        for slot in slots:
            if slot not in self.made:
                self.made.add(slot)
                self.lines.append(f"s{slot} = bound[{slot}]")

    def write(self) -> list[str]:
        """The lines of the call's body: they read `plan` and `scalars`, and `tensors`
        unless guarded (then a guard's lines have bound `t{j}` and `st{j}`)."""
        p, plan = self.p, self.plan
        ready = [self.ready(step) for step in plan.steps]
        self.kept = _kept_slots(plan, [s for s, r in zip(plan.steps, ready) if r is None])
        self.pool_room = POOL_BYTES - sum(plan.slots[i].nbytes for i in self.kept)
        needs_call = None in ready or any(
            type(src) is p.RandomWord
            for step in plan.steps
            for m in _launched(step, p)
            for _, src, _ in (getattr(m, "dynamic", None) or ())
        )
        if needs_call:  # the plan comes in as an argument: a constant would be a cycle
            self.names["_Call"] = p.Call
            self.lines.append(f"bound = [None] * {len(plan.slots)}")
            self.lines.append("call = _Call(plan, bound, scalars)")
        for (step, release), prepared in zip(plan.schedule, ready, strict=True):
            kind = type(step)
            if prepared is None:
                self.delegated(step)
            elif kind is p.KernelCall:
                self.kernel(step, prepared)
            elif kind is p.RowGroup:
                self.row_group(step, prepared)
            elif kind is self.MatmulCall:
                self.product(step, prepared)
            else:  # an Alias
                self.lines.append(f"s{step.dst} = {self.storage(step.src)}")
                self.made.add(step.dst)
            for slot in release or ():
                if slot in self.made:
                    self.lines.append(f"s{slot} = None")
                    if needs_call:
                        self.lines.append(f"bound[{slot}] = None")
        for slot, count in plan.bumps.items():  # an argument's even where no kernel ran
            if slot in self.made or plan.slots[slot].kind in (p.ARG, p.IMPLICIT):
                name = self.storage(slot)
                self.lines.append(f"if {name} is not None: {name}.version += {count}")
        results = [self.result(leaf) for leaf in plan.out_leaves]
        for i, first in enumerate(plan.same or ()):  # a tensor returned twice: one object
            if first == i:
                self.lines.append(f"r{i} = {results[i]}")
                results[i] = f"r{i}"
            else:
                results[i] = results[first]
        if self.pool_sizes:
            self.keep_pool()
        if plan.outputs is pytree.LEAF:
            self.lines.append(f"return {results[0]}")
        else:
            tree = self.constant("O", plan.outputs)
            self.lines.append(f"return _unflatten({tree}, [{', '.join(results)}])")
            self.names["_unflatten"] = pytree.unflatten
        return self.lines

    def keep_pool(self) -> None:
        """Lines taking a pool entry (the kept storages) first and giving it back last. An
        entry is taken by one call at a time (list.pop and append are atomic): a second
        thread calling meanwhile makes its own; a call that raises drops its entry."""
        sizes = tuple(self.pool_sizes)
        self.names.setdefault("_pool", [])  # build_guarded shares the replay's
        self.names["_fresh"] = lambda: tuple(Storage.host(n) for n in sizes)
        self.lines[:0] = ["try:", "    pool = _pool.pop()", "except IndexError:",
                          "    pool = _fresh()"]  # fmt: skip
        self.lines.append(f"if len(_pool) < {POOL_ENTRIES}: _pool.append(pool)")


def _launched(step, p) -> list:
    """The kernel calls a step launches whose run-time parameters the replay writes: a row
    group's members, a product's epilogue, or the step itself."""
    if type(step) is p.RowGroup:
        return step.members
    epilogue = getattr(step, "epilogue", None)
    return [epilogue] if epilogue is not None else [step]


# A replay keeps the storages of its intermediates that are small (a call's allocation and
# release would cost more than their kernels) and never leave it: nothing else can see them.
POOL_BYTES = 64 * 1024  # the most bytes one pool entry holds
POOL_ENTRIES = 2  # entries kept for calls from several threads at once


def _kept_slots(plan, delegated: list) -> set[int]:
    """The fresh host intermediates a replay keeps in its pool: read and written only by
    launches the replay writes out (a step it delegates, or an alias, could let the
    storage out), never a result, together at most POOL_BYTES."""
    from kael.frontend import plan as p

    shown = {leaf.buffer for leaf in plan.out_leaves if type(leaf) is p.View}
    bound = set()  # the slots the replay binds to a storage (a row group's local ones never)
    for step in plan.steps:
        if type(step) is p.Alias:
            shown |= {step.src, step.dst}
        else:
            local = step.local if type(step) is p.RowGroup else ()
            bound |= {v.buffer for v in step.views() if v.buffer not in local}
    for step in delegated:
        shown |= {v.buffer for v in step.views()}
    candidates = [
        (i, slot.nbytes)
        for i, slot in enumerate(plan.slots)
        if slot.kind == p.FRESH and slot.nbytes > 0 and slot.device == CPU
        if i in bound and i not in shown
    ]
    kept, total = set(), 0
    for i, nbytes in candidates:
        if total + nbytes <= POOL_BYTES:
            kept.add(i)
            total += nbytes
    return kept


def function(head: str, lines: list[str], names: dict, what: str) -> tuple[Callable, str]:
    """The function `head` with body `lines`, its globals `names`; and its source. `what`
    names it in tracebacks."""
    body = "\n".join("    " + line for line in lines)
    source = f"def {head}:\n{body}\n"
    namespace = dict(names)
    name = head.partition("(")[0]
    exec(compile(source, f"<kael {name} {what}>", "exec"), namespace)
    # popped: left in its own globals, the function would be a cycle, and its kept storages
    # would outlive the plan until the cyclic collector ran
    return namespace.pop(name), source


def build(plan, threads: int) -> Replay:
    """The plan's call written out for `threads` threads. Every step must have been
    prepared (run once) at that thread count."""
    writer = _Writer(plan, threads)
    lines = writer.write()
    steps = f"replay of {len(plan.steps)} steps"
    fn, source = function("replay(plan, tensors, scalars)", lines, writer.names, steps)
    pool = (tuple(writer.pool_sizes), writer.names.get("_pool"))
    return Replay(threads, fn, source, sum(writer.pool_sizes), pool)


def build_guarded(
    plan, ready: Replay, parts: tuple, twins: Callable, info, still: Callable | None = None
) -> Replay:
    """The plan's call for one positional signature (`parts`, compiled._signature's):
    fn(args) runs a call whose arguments match it, at the thread count of the plan's
    replay `ready` with no launch watched, counting a hit on `info`; any other call gets
    guard.MISS back and nothing run. `twins(tensors)` names two arguments that overlap
    through two storages, or None (compiled._call_twins); `still()` says whether the
    globals the plan read hold what they held (compiled._Entry.still_read), None where it
    read none. Where it keeps the same intermediates as `ready`, it takes them from the
    same pool."""
    from kael.runtime import debug, launches, threadpool

    threads = ready.threads
    writer = _Writer(plan, threads, guarded=True)
    sizes, pool = ready.pool
    writer.names["_pool"] = pool
    lines = writer.write()
    if tuple(writer.pool_sizes) != sizes:  # a step prepared anew since: kept otherwise
        writer.names["_pool"] = []
    checks = guard.lines(parts, twins, bool(plan.implicit), writer.names)
    if still is not None:
        writer.names["_still"] = still
        checks.append("if not _still(): return _MISS")
    writer.names.update(plan=plan, _threadpool=threadpool, _launches=launches, _debug=debug)
    writer.names["_info"] = info
    checks += [
        f"if _threadpool._num_threads != {threads} or _launches.recorder is not None "
        "or _debug.level >= 1: return _MISS",
        "scalars = args",
        "_info.hits += 1",
    ]
    steps = f"replay of {len(plan.steps)} steps"
    fn, source = function("guarded(args)", checks + lines, writer.names, steps)
    pool = (tuple(writer.pool_sizes), writer.names["_pool"])
    return Replay(threads, fn, source, sum(writer.pool_sizes), pool)
