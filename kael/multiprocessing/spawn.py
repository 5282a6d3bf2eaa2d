"""torch.multiprocessing.spawn and start_processes: run fn(i, *args) in nprocs child
processes, then join them, turning the first failure into ProcessRaisedException (with
the child's traceback) or ProcessExitedException, after stopping the other children.

A child that raises writes its traceback to its own error file, which the parent reads
once the child has exited (a file, not a pipe: a long traceback cannot block the child)."""

from __future__ import annotations

import builtins
import ctypes
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Sequence

from kael.multiprocessing.errors import ProcessExitedException, ProcessRaisedException
from kael.runtime import user_warning
from kael.runtime.errors import TypeError, ValueError

__all__ = ["ProcessContext", "SpawnContext", "spawn", "start_processes"]

_PR_SET_PDEATHSIG = 1  # prctl(2)'s option: the signal a process gets when its parent dies
_KILL_WAIT_S = 30.0  # how long terminated children get before SIGKILL, with no grace period


def _die_with_parent() -> None:
    """On Linux, have SIGINT sent to this process when its parent dies, as torch's children
    do, so that a non-daemonic child does not outlive a parent that crashed."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGINT)


def _wrap(fn: Callable, i: int, args: Sequence, error_file: str) -> None:
    """The child's entry point: fn(i, *args); an exception's traceback goes to
    `error_file` and the child exits with code 1. SIGINT (its parent died) exits quietly."""
    _die_with_parent()
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        with open(error_file, "w", encoding="utf-8") as fh:
            fh.write(traceback.format_exc())
        sys.exit(1)


def _error_file_name() -> str:
    """A fresh path for a child's traceback: the file exists only once the child fails."""
    fd, name = tempfile.mkstemp(prefix="kael-errorfile-", suffix=".txt")
    os.close(fd)
    os.unlink(name)
    return name


def _join_all(processes: Iterable, timeout: float) -> None:
    """Join every process within one shared `timeout` (seconds)."""
    end = time.monotonic() + timeout
    for process in processes:
        process.join(max(0.0, end - time.monotonic()))


def _stop(processes: Sequence, grace_period: float | None) -> None:
    """After a failure: give the others `grace_period` to finish, SIGTERM those still
    alive, SIGKILL those that outlast another grace period (30 s without one)."""
    if grace_period is not None:
        _join_all(processes, grace_period)
    for process in processes:
        if process.is_alive():
            process.terminate()
    _join_all(processes, _KILL_WAIT_S if grace_period is None else grace_period)
    for process in processes:
        if process.is_alive():
            process.kill()
        process.join()


def _exited(index: int, pid: int, exitcode: int) -> ProcessExitedException:
    """The exception for a child that exited with `exitcode` without raising: a negative
    code is a signal's, named as torch names it."""
    if exitcode >= 0:
        msg = f"process {index:d} terminated with exit code {exitcode:d}"
        return ProcessExitedException(msg, index, pid, exit_code=exitcode)
    try:
        name = signal.Signals(-exitcode).name
    except builtins.ValueError:
        name = f"<Unknown signal {-exitcode}>"
    msg = f"process {index:d} terminated with signal {name}"
    return ProcessExitedException(msg, index, pid, exit_code=exitcode, signal_name=name)


def _read_and_remove(path: str) -> str | None:
    """The traceback a child wrote to `path` (None when it wrote none); the file is gone
    afterwards."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None
    os.unlink(path)
    return text


class ProcessContext:
    """The children start_processes started (join=False): `processes`, their `pids()`,
    and `join`, which reports the first failure as torch's does."""

    def __init__(self, processes: Sequence, error_files: Sequence[str]):
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self) -> list[int]:
        """The children's process ids, in process-index order."""
        return [int(process.pid) for process in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait up to `timeout` seconds (forever by default) for a child to finish: True
        once all have exited cleanly, False while some still run. When one failed, stop
        the others (see _stop) and raise ProcessRaisedException or ProcessExitedException."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                _stop(self.processes, grace_period)
                raise self._failure(index)
        return not self.sentinels

    def _failure(self, index: int) -> ProcessRaisedException | ProcessExitedException:
        """Child `index`'s failure as an exception; every child's error file is removed."""
        texts = [_read_and_remove(path) for path in self.error_files]
        process = self.processes[index]
        if texts[index] is None:
            return _exited(index, process.pid, process.exitcode)
        msg = f"\n\n-- Process {index:d} terminated with the following error:\n{texts[index]}"
        return ProcessRaisedException(msg, index, process.pid)


class SpawnContext(ProcessContext):
    """ProcessContext's name before torch 1.4 (it warns, as torch's does)."""

    def __init__(self, processes: Sequence, error_files: Sequence[str]):
        user_warning.warn("SpawnContext is renamed to ProcessContext since 1.4 release.")
        super().__init__(processes, error_files)


def _check_nprocs(nprocs: int) -> None:
    """nprocs is a count: an int (not a bool) and not negative; 0 starts nothing, as in torch."""
    if isinstance(nprocs, bool) or not isinstance(nprocs, int):
        raise TypeError(f"start_processes(): nprocs must be an int, got {type(nprocs).__name__}")
    if nprocs < 0:
        raise ValueError(f"start_processes(): nprocs must be non-negative, got {nprocs}")


def _context(start_method: str) -> multiprocessing.context.BaseContext:
    """The multiprocessing context for `start_method` ('spawn', 'fork', 'forkserver')."""
    try:
        return multiprocessing.get_context(start_method)
    except builtins.ValueError:
        methods = multiprocessing.get_all_start_methods()
        raise ValueError(
            f"start_processes(): cannot find context for {start_method!r}, expected one of "
            f"{methods}"
        ) from None


def start_processes(
    fn: Callable,
    args: Sequence = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:
    """Start `nprocs` processes by `start_method`, process i running fn(i, *args). With
    join=True wait for all (None; a failure raises, see ProcessContext.join), else return
    their ProcessContext. fn must be picklable (module-level) unless start_method='fork'."""
    if not callable(fn):
        raise TypeError(f"start_processes(): fn must be callable, got {type(fn).__name__}")
    _check_nprocs(nprocs)
    mp = _context(start_method)
    error_files = [_error_file_name() for _ in range(nprocs)]
    processes = []
    try:
        for i, error_file in enumerate(error_files):
            process = mp.Process(target=_wrap, args=(fn, i, args, error_file), daemon=daemon)
            process.start()  # raises when fn or args cannot be pickled (spawn, forkserver)
            processes.append(process)
    except BaseException:
        _stop(processes, grace_period=0.0)  # none is left running unjoined
        raise
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(
    fn: Callable,
    args: Sequence = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:
    """start_processes by 'spawn' always, as torch: another start_method only warns
    (FutureWarning) and points to start_processes, which takes any."""
    if start_method != "spawn":
        user_warning.warn(
            f"This method only supports start_method=spawn (got: {start_method}).\n"
            "To use a different start_method use:\n\t\t"
            " kael.multiprocessing.start_processes(...)",
            FutureWarning,
        )
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
