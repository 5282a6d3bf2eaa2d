"""torch.multiprocessing's failure exceptions, which are kael errors too: a child process
that raised (ProcessRaisedException) or exited badly (ProcessExitedException)."""

from __future__ import annotations

from kael.runtime.errors import Error

__all__ = ["ProcessException", "ProcessExitedException", "ProcessRaisedException"]


class ProcessException(Error):
    """A child of start_processes failed: `error_index` is its process index, `error_pid`
    its pid (torch's ProcessException, and a kael.Error so kael code can catch it)."""

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A child raised an exception; the message holds the child's traceback."""


class ProcessExitedException(ProcessException):
    """A child exited with a nonzero `exit_code`, or was killed by the signal named
    `signal_name` (then exit_code is minus the signal number)."""

    def __init__(
        self,
        msg: str,
        error_index: int,
        error_pid: int,
        exit_code: int,
        signal_name: str | None = None,
    ):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        args = (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)
        return type(self), args
