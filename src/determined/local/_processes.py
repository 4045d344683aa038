"""The trial processes of a local experiment: started from the warm pool, one pipe each
(the protocol of :mod:`determined.harness._pipe_host`), and their exits noticed.

:class:`TrialProcesses` knows nothing of the experiment: it hands each message and each
exit to the driver's callbacks and sends what the driver answers.
"""

from __future__ import annotations

import dataclasses
import multiprocessing.connection
from typing import Any, Callable, Dict, Optional, Tuple

from determined.common import scratch
from determined.local._pool import WarmPool

__all__ = ["TrialProcesses"]

OnMessage = Callable[[int, Any], None]
OnExit = Callable[[int, Optional[int], Optional[str]], None]


@dataclasses.dataclass
class _Process:
    process: Any
    conn: Any
    eof: bool = False
    awaiting_op: bool = False  # asked for an operation, not answered yet
    error: Optional[str] = None  # the last ("error", kind, message) it sent


class TrialProcesses:
    """The running trial processes, by request id.

    Args:
        pool: where processes come from (:class:`~determined.local._pool.WarmPool`).
        on_message: called with (request id, message) for each message a process sends
            (but ``("error", ...)``, which is kept for its exit).
        on_exit: called with (request id, exit code, last error message) once a process
            has exited and everything it sent was handled; the process is gone by then,
            and so are the scratch directories it owned (:mod:`determined.common.scratch`).
    """

    def __init__(self, pool: WarmPool, on_message: OnMessage, on_exit: OnExit):
        self.pool = pool
        self.on_message, self.on_exit = on_message, on_exit
        self._procs: Dict[int, _Process] = {}

    def __len__(self) -> int:
        return len(self._procs)

    def __contains__(self, request_id: int) -> bool:
        return request_id in self._procs

    def start(self, request_id: int, args: Tuple[Any, ...]) -> None:
        """Run ``trial_main(conn, *args)`` for ``request_id`` in a pooled process."""
        process, conn = self.pool.run(args)
        self._procs[request_id] = _Process(process, conn)

    def send(self, request_id: int, msg: Any) -> None:
        """Send ``msg`` to a trial process; one that already exited (its pipe closed
        while its last reports were being read) is left to its exit's handling."""
        p = self._procs.get(request_id)
        if p is None:
            return
        try:
            p.conn.send(msg)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def awaiting_op(self, request_id: int) -> bool:
        """Whether the process asked for an operation it has not been sent yet."""
        p = self._procs.get(request_id)
        return p is not None and p.awaiting_op

    def set_awaiting_op(self, request_id: int, awaiting: bool) -> None:
        p = self._procs.get(request_id)
        if p is not None:
            p.awaiting_op = awaiting

    def kill(self, request_id: int) -> None:
        """SIGKILL the process; its exit is handled as any other."""
        p = self._procs.get(request_id)
        if p is not None and p.process.is_alive():
            p.process.kill()

    def wait(self, timeout: float = 1.0, wake: Any = None) -> None:
        """Wait up to ``timeout`` seconds for messages and exits, and hand them on;
        ``wake`` (a socket or connection, or None) ends the wait early when readable."""
        waitables: Dict[Any, int] = {}
        for r, p in self._procs.items():
            waitables[p.conn] = r
            waitables[p.process.sentinel] = r
        ready = multiprocessing.connection.wait(
            list(waitables) + ([wake] if wake is not None else []), timeout=timeout)
        for r in dict.fromkeys(waitables[obj] for obj in ready if obj in waitables):
            p = self._procs.get(r)
            if p is None:
                continue
            self._drain(r, p)
            if r in self._procs and not p.process.is_alive() and (p.eof or not p.conn.poll()):
                self._ended(r, p)

    def _drain(self, r: int, p: _Process) -> None:
        while r in self._procs and not p.eof and p.conn.poll():
            try:
                msg = p.conn.recv()
            except (EOFError, OSError):
                p.eof = True
                return
            if msg[0] == "error":
                p.error = msg[2]
            else:
                self.on_message(r, msg)

    def _ended(self, r: int, p: _Process) -> None:
        p.process.join()
        p.conn.close()
        scratch.remove_owned(p.process.pid)  # left by a process that was killed
        del self._procs[r]
        self.on_exit(r, p.process.exitcode, p.error)

    def terminate_all(self) -> None:
        """End every process now (SIGTERM, then SIGKILL after 5 s); no exit is handled."""
        for p in self._procs.values():
            if p.process.is_alive():
                p.process.terminate()
                p.process.join(5)
                if p.process.is_alive():
                    p.process.kill()
                    p.process.join(5)
            scratch.remove_owned(p.process.pid)
        self._procs.clear()
