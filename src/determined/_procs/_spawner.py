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

__all__ = ["Spawner", "SpawnError", "prestart_zygote", "discard_prestarted_zygote"]

#: (pid, exit code); negative codes are signals, as in :mod:`subprocess`
ExitCallback = Callable[[int, int], None]


class SpawnError(RuntimeError):
    """The zygote could not start a trial process."""


def _default_preload() -> List[str]:
    # With torch, the zygote also warms up what trials import lazily.
    return ["torch"] if importlib.util.find_spec("torch") is not None else []


def _launch_zygote(preload: Sequence[str]) -> Tuple[socket.socket, subprocess.Popen]:
    """Start a zygote process; it says it is ready (one message) once it has imported."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    env = dict(os.environ, PYTHONUNBUFFERED="1", DET_ZYGOTE_PRELOAD=",".join(preload))
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "determined._procs._zygote", str(theirs.fileno())],
            pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL,
        )
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    return ours, proc


_early_lock = threading.Lock()
#: a zygote started ahead of the first Spawner: (socket, process, its preload)
_early: Optional[Tuple[socket.socket, subprocess.Popen, Tuple[str, ...]]] = None


def prestart_zygote(preload: Optional[Sequence[str]] = None) -> None:
    """Start a zygote now, so that its imports (PyTorch: seconds) overlap what this
    process does before it builds its :class:`Spawner` (the master: its own imports and
    database). The first Spawner with the same ``preload`` adopts it; see
    :func:`discard_prestarted_zygote` for one no Spawner took. A second call does
    nothing.

    Example::

        prestart_zygote()           # first thing in a program's main
        ...                         # its own imports and set-up
        spawner = Spawner(on_exit)  # its first spawn uses that zygote
    """
    global _early
    with _early_lock:
        if _early is None:
            loaded = tuple(_default_preload() if preload is None else preload)
            _early = (*_launch_zygote(loaded), loaded)


def discard_prestarted_zygote() -> None:
    """Stop the prestarted zygote if no Spawner adopted it (no-op otherwise)."""
    global _early
    with _early_lock:
        early, _early = _early, None
    if early is not None:
        _stop_unused(early[0], early[1])


def _stop_unused(sock: socket.socket, proc: subprocess.Popen) -> None:
    sock.close()
    proc.kill()  # it may still be importing: it would only see the closed end later
    proc.wait()


def _adopt_prestarted(preload: Sequence[str]) -> Optional[Tuple[socket.socket, subprocess.Popen]]:
    """The prestarted zygote if it preloads ``preload`` and is running, else None (one
    that does not fit is stopped)."""
    global _early
    with _early_lock:
        early = _early
        if early is None:
            return None
        _early = None
    sock, proc, loaded = early
    if list(loaded) == list(preload) and proc.poll() is None:
        return sock, proc
    _stop_unused(sock, proc)
    return None


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
        self._preload = _default_preload() if preload is None else preload
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
        ours, proc = _adopt_prestarted(self._preload) or _launch_zygote(self._preload)
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
