"""The trial-process side of a script trial: run the entrypoint command as a child.

Every launcher starts the usual trial process (the local driver's ``trial_main``, the
master's ``_rest_host`` through an agent's zygote or a Ray actor). When the entrypoint
is a command, that process calls :func:`run_script` instead of running a
``TrialRunner``: it starts the command (working directory: the model directory; its
own process group; stdout and stderr shared, so its output is the trial's log) and
serves the requests the command sends over its link (:mod:`._script_link`) by calling
its own :class:`TrialHost`, so it stays the only process talking to the driver or
master. All host calls come from the calling thread.

A trial spanning several machines (agents) runs the command once per machine: the
chief's trial process as above, every other machine's :func:`run_script_part`, which
runs it without a link (its ranks reach the chief's through ``core.distributed``); each
machine's ``det.get_cluster_info()`` tells the command its place (``rendezvous``).

Training and progress reports are one-way (the script does not wait) and reach the
host in batches, in the order sent; see :class:`_Server`. When the script exits, however
it exits, everything it sent is read and forwarded before its exit is reported.

Stops and kills:

- when the host says the trial must stop (pause, preemption, a searcher decision), the
  child is told (its ``should_stop()`` turns true) and gets ``DET_SCRIPT_STOP_GRACE``
  seconds (default 60) to checkpoint and exit before its process group gets SIGTERM,
  then SIGKILL ``KILL_GRACE`` seconds later; the trial process then exits 0;
- SIGTERM to this process (an agent or Ray stopping the trial) passes SIGTERM on to
  the child's group, then SIGKILL after ``KILL_GRACE`` seconds;
- SIGKILL to this process (an agent's or the local driver's kill): the child gets
  SIGKILL too (``PR_SET_PDEATHSIG``), and a guard process in a session of its own
  SIGKILLs the child's process group (what the script started, e.g. its ranks) once
  this process is gone.

Exit codes: the child's; killed by signal N: 128 + N. The host hears the child's code
through ``script_exited`` first.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection, Listener, wait
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from determined.common import scratch
from determined.config import script_command
from determined.errors import InvalidModelDefError
from determined.harness._env import TrialEnv
from determined.harness._host import OpKind, TrialHost
from determined.harness._script_link import (
    AUTHKEY_ENV,
    CLUSTER_INFO_ENV,
    LATEST_CHECKPOINT_ENV,
    LINK_ENV,
    write_cluster_info,
)
from determined.storage import build_storage

__all__ = ["run_script", "run_script_part", "STOP_GRACE_ENV", "KILL_GRACE"]

logger = logging.getLogger("determined")

STOP_GRACE_ENV = "DET_SCRIPT_STOP_GRACE"
KILL_GRACE = 10.0
_POLL_SECONDS = 0.2
#: Rank variables of the trial process; the script starts (and numbers) its own ranks.
_RANK_VARS = ("DET_RANK", "DET_SIZE", "DET_LOCAL_RANK", "DET_LOCAL_SIZE", "DET_NUM_AGENTS",
              "DET_NODE_RANK")


def _stop_grace() -> float:
    raw = os.environ.get(STOP_GRACE_ENV, "60")
    try:
        return max(0.0, float(raw))
    except ValueError:
        raise ValueError(f"Expected {STOP_GRACE_ENV} to be a number of seconds. "
                         f"Received: {raw!r}") from None


def _checkpoint_uuid(path: Optional[str]) -> Optional[str]:
    """The storage id of a checkpoint path (its last component)."""
    return os.path.basename(path.rstrip("/")) if path else None


def _child_preexec(parent: int) -> Callable[[], None]:
    """In the child before exec: die with this process, default Ctrl-C handling."""
    try:
        import ctypes

        libc: Any = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        libc = None

    def preexec() -> None:
        if libc is not None:
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # local trial processes ignore it
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


#: The guard: waits on a pipe from the trial process; end of file without a byte first
#: (the trial process died) SIGKILLs the script's process group.
_GUARD = ("import os, signal, sys\n"
          "group, fd = int(sys.argv[1]), int(sys.argv[2])\n"
          "if not os.read(fd, 1):\n"
          "    try:\n"
          "        os.killpg(group, signal.SIGKILL)\n"
          "    except OSError:\n"
          "        pass\n")


class _Child:
    """The running command and its process group (and the group's guard)."""

    def __init__(self, argv: List[str], cwd: str, env: Mapping[str, str],
                 rewrite: Optional[Callable[[str], str]] = None):
        pipe = subprocess.PIPE if rewrite is not None else None
        try:
            self.proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                                         stdout=pipe, stderr=pipe, start_new_session=True,
                                         preexec_fn=_child_preexec(os.getpid()))
        except OSError as e:
            raise InvalidModelDefError(
                f"entrypoint: cannot run {argv[0]!r} in {cwd}: {e.strerror or e}") from None
        self._relays = [] if rewrite is None else [
            threading.Thread(target=_relay, args=(src, dst, rewrite), daemon=True,
                             name="det-script-output")
            for src, dst in ((self.proc.stdout, sys.stdout), (self.proc.stderr, sys.stderr))]
        for relay in self._relays:
            relay.start()
        self.signalled: Optional[int] = None
        read_end, self._guard_pipe = os.pipe()
        try:
            self._guard: Optional[subprocess.Popen] = subprocess.Popen(
                [sys.executable, "-S", "-c", _GUARD, str(self.proc.pid), str(read_end)],
                pass_fds=(read_end,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:  # the script runs anyway; only a hard kill may orphan its group
            logger.warning("script trial: no guard for the script's process group: %s", e)
            self._guard = None
        finally:
            os.close(read_end)

    def signal_group(self, sig: int) -> None:
        self.signalled = sig
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self) -> None:
        """End the group (the child first, if still running: the trial process is
        failing) and tell the guard all is done (a byte before end of file)."""
        if self._guard_pipe < 0:
            return
        if self.proc.poll() is None:
            self.signal_group(signal.SIGKILL)
            self.proc.wait()
        for relay in self._relays:  # the child's last lines, before anything after it
            relay.join(5)
        try:  # processes the child left in its group go too
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            os.write(self._guard_pipe, b"x")
        except OSError:
            pass
        os.close(self._guard_pipe)
        self._guard_pipe = -1
        if self._guard is not None:
            try:
                self._guard.wait(10)
            except subprocess.TimeoutExpired:
                self._guard.kill()


def _relay(source: Any, dest: Any, rewrite: Callable[[str], str]) -> None:
    """Copy the child's output, a line at a time, through ``rewrite``."""
    for raw in iter(source.readline, b""):
        dest.write(rewrite(raw.decode("utf-8", errors="replace")))
        dest.flush()
    source.close()


#: What a script's method is called, by the one-way message it sends.
_ONE_WAY_METHODS = {"training": "report_training_metrics", "progress": "report_progress"}
#: Requests the script waits on an answer for.
_ANSWERED = ("next_op", "is_best", "best_validation", "recorded_checkpoints")


class _Server:
    """Serves the child's link connections with ``host``'s answers.

    Training and progress reports are one-way: the script sends them and goes on. They
    are read as they come and forwarded in batches (after a round of reading, at most
    ``MAX_BATCH`` at once); every other message first forwards what is pending, so the
    host sees everything in the order the script sent it. A one-way report the host
    rejects is logged and answers the script's next request instead
    (``("failed", message)``: :class:`~determined.errors.ReportError` in the script);
    one never told is :attr:`failure` when the script exits.
    """

    #: Seconds to wait for more reports once one arrived, so a script reporting every
    #: batch wakes this process (and the host) once per batch of reports, not per report
    #: (a request arriving meanwhile waits at most this long).
    LINGER_SECONDS = 0.02
    MAX_BATCH = 1000

    def __init__(self, host: TrialHost):
        self.host = host
        self.conns: List[Connection] = []
        self.stop_sent = False
        self.failure: Optional[str] = None
        self._training: List[Tuple[int, Dict[str, Any]]] = []
        self._progress: Optional[float] = None

    def add(self, conn: Connection) -> None:
        self.conns.append(conn)
        if self.stop_sent:
            self._send(conn, ("stop",))

    def _send(self, conn: Connection, message: Any) -> None:
        try:
            conn.send(message)
        except OSError:  # the child went away; its EOF removes the connection
            pass

    def serve_ready(self, timeout: float) -> None:
        """Serve what arrives within ``timeout``, then forward the pending reports."""
        ready = wait(self.conns, timeout) if self.conns else _sleep(timeout)
        if not ready:
            return
        self._read(ready)  # type: ignore[arg-type]
        if self._training or self._progress is not None:
            time.sleep(self.LINGER_SECONDS)
            self._read(wait(self.conns, 0))  # type: ignore[arg-type]
        self.flush()

    def drain(self, limit: float = 60.0) -> None:
        """After the child exited: everything it sent (already readable), then the
        pending reports. A connection a process of the script still holds open ends
        the drain once nothing more is readable, or after ``limit`` seconds."""
        deadline = time.monotonic() + limit
        while self.conns and time.monotonic() < deadline:
            ready = wait(self.conns, 0.1)
            if not ready:
                break
            self._read(ready, child_gone=True)  # type: ignore[arg-type]
        self.flush(until_stored=True)

    def _read(self, conns: List[Connection], child_gone: bool = False) -> None:
        """Every message readable now on ``conns``, in order (a connection at EOF is
        removed)."""
        for conn in conns:
            for _ in range(self.MAX_BATCH):
                try:
                    if not conn.poll():
                        break
                    msg = conn.recv()
                except (EOFError, OSError):
                    self.conns.remove(conn)
                    conn.close()
                    break
                self.handle(conn, msg, child_gone)

    def flush(self, until_stored: bool = False) -> None:
        """Forward the pending one-way reports: the training ones in one call, then the
        largest progress read since the last forward (what the host keeps anyway).
        ``until_stored``: also wait until the host stored the training reports (before any
        other call, which would wait anyway, so a refusal is put down to them)."""
        host = self.host
        if self._training:
            reports, self._training = self._training, []
            self._forward("training", lambda: host.report_training_batch(reports))
        if until_stored or self._progress is not None:
            self._forward("training", host.flush)
        if self._progress is not None:
            units, self._progress = self._progress, None
            self._forward("progress", lambda: host.report_progress(units))

    def _forward(self, kind: str, call: Callable[[], None]) -> None:
        try:
            call()
        except Exception as e:  # noqa: BLE001 - the script hears of it; the trial goes on
            self.record_failure(kind, e)

    def record_failure(self, kind: str, error: BaseException) -> None:
        message = (f"{_ONE_WAY_METHODS[kind]}: the trial's host rejected a report: "
                   f"{type(error).__name__}: {error}")
        logger.error("script trial: %s", message)
        if self.failure is None:
            self.failure = message

    def handle(self, conn: Connection, msg: Any, child_gone: bool = False) -> None:
        host, kind = self.host, msg[0]
        if kind == "training":
            self._training.append((msg[1], msg[2]))
            if len(self._training) >= self.MAX_BATCH:
                self.flush()
            return
        if kind == "progress":  # hosts keep the largest progress: so does the batch
            self._progress = msg[1] if self._progress is None else max(self._progress, msg[1])
            return
        self.flush(until_stored=True)
        if kind in _ANSWERED:
            if child_gone:
                return  # nobody waits for the answer
            if self.failure is not None:
                failure, self.failure = self.failure, None
                self._send(conn, ("failed", failure))
                return
        if kind == "next_op":
            op = host.next_operation()
            answer = op.to_dict()
            if op.kind is OpKind.CLOSE and host.should_stop():
                answer["stop"] = True  # a Close that only stops: the trial resumes later
            self._send(conn, ("op", answer))
        elif kind == "validation":
            host.report_validation(msg[1], msg[2])
        elif kind == "validate_op_completed":
            host.validate_op_completed(msg[1], msg[2])
        elif kind == "checkpoint":
            host.report_checkpoint(msg[1], msg[2], msg[3])
        elif kind == "is_best":
            self._send(conn, ("best", host.is_best_validation(msg[1])))
        elif kind == "best_validation":
            self._send(conn, ("best_value", host.experiment_best_validation()))
        elif kind == "recorded_checkpoints":
            recorded = host.recorded_checkpoints()
            self._send(conn, ("recorded", None if recorded is None else sorted(recorded)))
        elif kind == "early_exit":
            host.report_early_exit(msg[1])
        elif kind in ("error", "exit", "script_exited"):
            pass  # the child's own notes; its exit code is what counts
        else:
            logger.warning("script trial: ignoring an unknown link message %r", kind)

    def tell_stop(self) -> None:
        self.stop_sent = True
        for conn in self.conns:
            self._send(conn, ("stop",))

    def close(self) -> None:
        for conn in self.conns:
            conn.close()
        self.conns = []


def _sleep(seconds: float) -> List[Any]:
    time.sleep(seconds)
    return []


def _child_env(env: TrialEnv, link: Optional[Tuple[str, bytes]], info_path: str,
               latest: Optional[str]) -> dict:
    """The script's environment; ``link``: the link's (address, authkey), None on a
    machine other than the chief's (its script has no link)."""
    import determined

    out = {k: v for k, v in os.environ.items()
           if k not in _RANK_VARS and k not in (LINK_ENV, AUTHKEY_ENV)}
    if link is not None:
        out.update({LINK_ENV: link[0], AUTHKEY_ENV: link[1].hex()})
    out.update({
        CLUSTER_INFO_ENV: info_path,
        "DET_TRIAL_ID": str(env.trial_id), "DET_EXPERIMENT_ID": str(env.experiment_id),
        "DET_HPARAMS": json.dumps(env.hparams, default=str), "PYTHONUNBUFFERED": "1",
    })
    out.pop(LATEST_CHECKPOINT_ENV, None)
    if latest:
        out[LATEST_CHECKPOINT_ENV] = latest
    # The script imports the same ``determined`` as this process.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(determined.__file__)))
    paths = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p]
    out["PYTHONPATH"] = os.pathsep.join([package_root] + [p for p in paths if p != package_root])
    return out


def _accept_forever(listener: Listener, accepted: "queue.Queue[Connection]") -> None:
    while True:
        try:
            accepted.put(listener.accept())
        except OSError:  # closed: the trial is over
            return
        except Exception as e:  # noqa: BLE001 - a bad handshake must not end the trial
            logger.warning("script trial: refused a link connection: %s", e)


def run_script(env: TrialEnv, host: TrialHost, storage_config: Mapping[str, Any],
               master_url: Optional[str] = None,
               rendezvous: Optional[Mapping[str, Any]] = None,
               rewrite: Optional[Callable[[str], str]] = None) -> int:
    """Run the trial's command until it exits; serve its link with ``host``.

    Args:
        env: the trial (its ``experiment_config["entrypoint"]`` is the command;
            ``model_dir`` is the working directory).
        host: the trial process's host (pipe, REST or in-process).
        storage_config: the checkpoint_storage section, for the script.
        master_url: the master's URL (None in local runs).
        rendezvous: the trial's machines when it spans several (this one: the chief's),
            for ``det.get_cluster_info()``; see :func:`run_script_part`.
        rewrite: when given, the command's output goes through it, a line at a time,
            to this process's stdout and stderr (``--local --test`` names the user's
            model directory in place of the copy it runs in); else the command
            shares them.

    Returns:
        The exit code for the trial process (see the module docstring).

    Raises:
        InvalidModelDefError: the command cannot be started (not found, not executable).
    """
    argv = script_command(env.experiment_config["entrypoint"])
    grace = _stop_grace()
    workdir, info_path, latest = _prepare(env, storage_config, master_url, rendezvous)
    _remove_leftovers(env, host, storage_config, latest)
    address = os.path.join(workdir, "link")
    authkey = secrets.token_bytes(32)
    listener = Listener(address, family="AF_UNIX", authkey=authkey)
    accepted: "queue.Queue[Connection]" = queue.Queue()
    threading.Thread(target=_accept_forever, args=(listener, accepted),
                     name="det-script-link", daemon=True).start()
    terminated = threading.Event()
    restore = _on_sigterm(terminated.set)
    server = _Server(host)
    child: Optional[_Child] = None
    try:
        logger.info("trial %s runs its script: %s", env.trial_id, " ".join(argv))
        child = _Child(argv, env.model_dir,
                       _child_env(env, (address, authkey), info_path, latest), rewrite)
        _supervise(child, server, accepted, terminated, grace)
        while not accepted.empty():
            server.add(accepted.get())
        server.drain()
        child.close()
        code = child.proc.returncode
        stopped = child.signalled is not None and not terminated.is_set()
        logger.info("trial %s: script %s", env.trial_id, _describe(code, stopped))
        reported = 0 if stopped else code
        if server.failure is not None and reported == 0:
            logger.error("trial %s fails: not every report of the script was stored (%s)",
                         env.trial_id, server.failure)
            reported = 1
        host.script_exited(reported)
        return _exit_status(reported, terminated)
    finally:
        if child is not None:
            child.close()
        restore()
        listener.close()
        server.close()
        shutil.rmtree(workdir, ignore_errors=True)


def _supervise(child: _Child, server: Optional[_Server],
               accepted: "Optional[queue.Queue[Connection]]", terminated: threading.Event,
               grace: float) -> None:
    """Serve the child's link (if it has one: ``server``) until it exits; tell it to
    stop when the host or a SIGTERM says so, and escalate to SIGTERM and SIGKILL when it
    does not."""
    stop_at: Optional[float] = None
    term_at: Optional[float] = None
    while child.proc.poll() is None:
        if server is not None and accepted is not None:
            while not accepted.empty():
                server.add(accepted.get())
            server.serve_ready(_POLL_SECONDS)
        else:
            _wait_exit(child, _POLL_SECONDS)
        now = time.monotonic()
        if stop_at is None and (terminated.is_set()
                                or (server is not None and server.host.should_stop())):
            if server is not None:
                server.tell_stop()
            stop_at = now - grace if terminated.is_set() else now
        if stop_at is not None and term_at is None and now - stop_at >= grace:
            logger.info("the script did not exit after a stop request; sending SIGTERM")
            child.signal_group(signal.SIGTERM)
            term_at = now
        if term_at is not None and now - term_at >= KILL_GRACE:
            child.signal_group(signal.SIGKILL)


def _wait_exit(child: _Child, timeout: float) -> None:
    try:
        child.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        pass


def run_script_part(env: TrialEnv, storage_config: Mapping[str, Any],
                    master_url: Optional[str], rendezvous: Mapping[str, Any]) -> int:
    """Run the trial's command on a machine other than the chief's, without a link: its
    ranks reach the chief's through ``core.distributed`` (the launcher reads this
    machine's place, ``rendezvous``, from ``det.get_cluster_info()``).

    A pause or searcher stop reaches the command through the chief's ranks; SIGTERM to
    this process goes on as SIGTERM, then SIGKILL, to the command's group; a SIGKILL
    (the agent killing the part) takes the group with it, as for :func:`run_script`.
    Returns the command's exit code (as :func:`run_script`)."""
    argv = script_command(env.experiment_config["entrypoint"])
    workdir, info_path, latest = _prepare(env, storage_config, master_url, rendezvous)
    terminated = threading.Event()
    restore = _on_sigterm(terminated.set)
    child: Optional[_Child] = None
    machine = rendezvous.get("container_rank")
    try:
        logger.info("trial %s runs its script on machine %s: %s", env.trial_id, machine,
                    " ".join(argv))
        child = _Child(argv, env.model_dir, _child_env(env, None, info_path, latest))
        _supervise(child, None, None, terminated, grace=0.0)
        child.close()
        code = child.proc.returncode
        logger.info("trial %s: script on machine %s %s", env.trial_id, machine,
                    _describe(code, False))
        return _exit_status(code, terminated)
    finally:
        if child is not None:
            child.close()
        restore()
        shutil.rmtree(workdir, ignore_errors=True)


def _prepare(env: TrialEnv, storage_config: Mapping[str, Any], master_url: Optional[str],
             rendezvous: Optional[Mapping[str, Any]]) -> Tuple[str, str, Optional[str]]:
    """A fresh directory with the script's ``DET_CLUSTER_INFO`` file: (directory, the
    file's path, the uuid of the checkpoint to resume from)."""
    workdir = scratch.make("script")
    info_path = os.path.join(workdir, "cluster_info.json")
    latest = _checkpoint_uuid(env.latest_checkpoint)
    write_cluster_info(info_path, env, storage_config, master_url, latest, rendezvous)
    return workdir, info_path, latest


def _remove_leftovers(env: TrialEnv, host: TrialHost, storage_config: Mapping[str, Any],
                      latest: Optional[str]) -> None:
    """Before the script starts (no earlier process of the trial is left): what earlier
    processes of this trial left in its storage goes, as for a Trial (its owner's
    unfinished writes; complete checkpoints later than the one it resumes from that the
    host has no record of). When the resumed checkpoint's batch count cannot be read,
    only unfinished writes go."""
    if not env.experiment_id or not env.trial_id:
        return
    try:
        storage = build_storage(storage_config)
        recorded = host.recorded_checkpoints()
        batches = 0
        if latest and not env.warm_start:
            meta = storage.checkpoint_metadata(latest) or {}
            found = meta.get("batch_number")
            if isinstance(found, int) and not isinstance(found, bool):
                batches = found
            else:
                recorded = None
        for path in storage.remove_leftovers(env.experiment_id, env.trial_id, recorded,
                                             None if env.warm_start else latest, batches,
                                             owner=env.owner):
            logger.info("removed an unfinished checkpoint write of this trial: %s", path)
    except Exception as e:  # noqa: BLE001 - leftovers cost space, never the trial
        logger.warning("could not look for unfinished checkpoint writes: %s", e)


def _exit_status(code: int, terminated: threading.Event) -> int:
    """This process's exit code for the script's ``code`` (see the module docstring)."""
    if terminated.is_set():
        return 128 + signal.SIGTERM
    return code if code >= 0 else 128 - code


def _describe(code: int, stopped: bool) -> str:
    how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
    return how + (" after a stop request" if stopped else "")


def _on_sigterm(handler: Callable[[], None]) -> Callable[[], None]:
    """Call ``handler`` on SIGTERM (main thread only); returns what restores the old one."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: handler())

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore

