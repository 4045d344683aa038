"""The spawner: start, watch and kill trial processes forked from a zygote (``_zygote``)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from determined.common import scratch

__all__ = ["Spawner", "SpawnError"]

#: (pid, exit code); negative codes are signals, as in :mod:`subprocess`
ExitCallback = Callable[[int, int], None]


class SpawnError(RuntimeError):
    """The zygote could not start a trial process."""


class Spawner:
    """Forks trial processes (``determined.harness._rest_host``) from a zygote.

    The zygote is started lazily and restarted if it dies. Each spawned process
    writes its stdout and stderr to a pipe whose read end :meth:`spawn` returns;
    ``on_exit(pid, code)`` is called from a background thread when it ends.

    Args:
        on_exit: called once per spawned process with its exit code.
        preload: modules the zygote imports before forking (default: PyTorch and
            ``determined.pytorch`` when installed; TensorFlow is not fork-safe once
            initialised, so TensorFlow trials import it themselves).
    """

    def __init__(self, on_exit: ExitCallback, preload: Optional[List[str]] = None):
        self._on_exit = on_exit
        if preload is None:
            # With torch, the zygote also warms up what trials import lazily.
            preload = ["torch"] if importlib.util.find_spec("torch") is not None else []
        self._preload = preload
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._sock: Optional[socket.socket] = None
        self._proc: Optional[subprocess.Popen] = None
        self._replies: Dict[int, Dict] = {}
        self._next_id = 0
        self._closed = False
        self._generation = 0
        self._alive_pids: Dict[int, int] = {}  # pid -> zygote generation

    # -- public -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the zygote now (otherwise the first spawn does); first remove the scratch
        directories that trial processes no longer running left (a previous agent's
        trials, killed with it: see :mod:`determined.common.scratch`)."""
        scratch.sweep_dead_owners()
        with self._lock:
            self._ensure_zygote()

    def spawn(self, env: Dict[str, str], cwd: str, module: Optional[str] = None,
              args: Sequence[str] = ()) -> Tuple[int, int]:
        """Start a process; returns ``(pid, read_fd)`` of its output pipe.

        It runs the trial runner, or ``module`` with ``args`` as ``python -m``
        would; ``env`` is added to the zygote's environment.
        """
        read_fd, write_fd = os.pipe()
        try:
            with self._lock:
                if self._closed:
                    raise SpawnError("the agent is shutting down")
                sock = self._ensure_zygote()
                self._next_id += 1
                req_id = self._next_id
                request: Dict = {"spawn": req_id, "env": env, "cwd": cwd}
                if module is not None:
                    request.update(module=module, args=list(args))
                message = json.dumps(request).encode()
                try:
                    socket.send_fds(sock, [message], [write_fd])
                except OSError as e:
                    raise SpawnError(f"the zygote is gone: {e}") from e
                generation = self._generation
                while req_id not in self._replies:
                    if self._generation != generation or self._closed:
                        raise SpawnError("the zygote exited while starting a trial")
                    self._cond.wait(10.0)
                reply = self._replies.pop(req_id)
                if "pid" not in reply:
                    raise SpawnError(reply.get("error", "unknown error"))
                self._alive_pids[reply["pid"]] = generation
                return reply["pid"], read_fd
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)

    def close(self) -> None:
        """Stop the zygote; it kills the trial processes it still has."""
        with self._lock:
            self._closed = True
            sock, proc = self._sock, self._proc
            self._cond.notify_all()
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        if proc is not None:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    # -- internals ----------------------------------------------------------------------

    def _ensure_zygote(self) -> socket.socket:
        if self._sock is not None and self._proc is not None and self._proc.poll() is None:
            return self._sock
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = dict(os.environ, PYTHONUNBUFFERED="1", DET_ZYGOTE_PRELOAD=",".join(self._preload))
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "determined._procs._zygote", str(theirs.fileno())],
                pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL,
            )
        finally:
            theirs.close()
        ready = ours.recv(4096)
        if not ready:
            proc.wait()
            raise SpawnError(f"the zygote exited during start-up with code {proc.returncode}")
        self._generation += 1
        self._sock, self._proc = ours, proc
        threading.Thread(target=self._listen, args=(ours, proc, self._generation),
                         name="det-zygote-listener", daemon=True).start()
        return ours

    def _listen(self, sock: socket.socket, proc: subprocess.Popen, generation: int) -> None:
        while True:
            try:
                data = sock.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                break
            message = json.loads(data)
            if "exited" in message:
                with self._lock:
                    self._alive_pids.pop(message["exited"], None)
                self._on_exit(message["exited"], message["code"])
                continue
            req_id = message.get("spawned", message.get("failed"))
            with self._lock:
                self._replies[req_id] = message
                self._cond.notify_all()
        # The zygote is gone: its children were killed with it (or will be reported
        # by nobody), so report each still-running one as killed.
        proc.wait()
        with self._lock:
            lost = [pid for pid, gen in self._alive_pids.items() if gen == generation]
            for pid in lost:
                del self._alive_pids[pid]
            if self._sock is sock:
                self._sock = None
                self._proc = None
                self._generation += 1
            self._cond.notify_all()
        for pid in lost:
            try:  # orphaned by a zygote that died without cleaning up
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            self._on_exit(pid, -9)
