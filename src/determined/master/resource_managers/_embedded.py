"""The embedded agent: trial processes started on the master's own machine.

Each trial runs ``python -m determined.harness._rest_host`` in a new session (its own
process group), so killing a trial kills everything it started. Its stdout and
stderr are read line by line and shipped to the log store in batches.

Trial processes come from a warm pool: processes started ahead of need that have
already imported the platform and PyTorch (if installed) and wait on stdin for
their trial. Handing one over takes milliseconds instead of an interpreter start
and a framework import; each still runs exactly one trial.
"""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from determined.master import scheduler

__all__ = ["EmbeddedResourceManager", "AGENT_ID"]

AGENT_ID = "embedded"

#: (trial_id, exit_code)
ExitCallback = Callable[[int, int], None]
LogSink = Callable[[int, List[str]], None]


class EmbeddedResourceManager:
    """One agent with ``slots`` slots on this machine.

    Args:
        slots: how many slots the agent offers.
        on_exit: called (from a reader thread) with ``(trial_id, exit_code)`` once a
            trial process has exited and its output has been shipped.
        log_sink: stores a trial's log lines.
    """

    def __init__(self, slots: int, on_exit: ExitCallback, log_sink: LogSink):
        if slots < 1:
            raise ValueError(f"Expected slots >= 1. Received: slots={slots}")
        self.slots = slots
        self._on_exit = on_exit
        self._log_sink = log_sink
        self._procs: Dict[int, subprocess.Popen] = {}
        self._lock = threading.Lock()
        self._lines: "queue.Queue[Optional[Tuple[int, str]]]" = queue.Queue()
        self._closed = False
        self._shipper = threading.Thread(target=self._ship_logs, name="det-log-shipper",
                                         daemon=True)
        self._shipper.start()
        self._idle: List[subprocess.Popen] = []
        self._preload = [m for m in ("torch",) if importlib.util.find_spec(m) is not None]
        self._refill = threading.Event()
        self._pooler = threading.Thread(target=self._keep_pool, name="det-trial-pool", daemon=True)
        self._pooler.start()

    def agents(self) -> List[scheduler.Agent]:
        return [scheduler.Agent(AGENT_ID, self.slots)]

    def launch(self, trial_id: int, env: Dict[str, str], slot_ids: Sequence[int],
               cwd: str) -> int:
        """Start the trial's process; returns its pid."""
        assignment = dict(env)
        assignment["DET_SLOT_IDS"] = ",".join(str(s) for s in slot_ids)
        proc = self._take_warm()
        try:
            assert proc.stdin is not None
            proc.stdin.write((json.dumps({"env": assignment, "cwd": cwd}) + "\n").encode())
            proc.stdin.close()
        except (BrokenPipeError, OSError):  # it died while waiting: start one cold
            proc = self._start_pooled()
            assert proc.stdin is not None
            proc.stdin.write((json.dumps({"env": assignment, "cwd": cwd}) + "\n").encode())
            proc.stdin.close()
        self._refill.set()
        with self._lock:
            self._procs[trial_id] = proc
        threading.Thread(target=self._read, args=(trial_id, proc),
                         name=f"det-trial-{trial_id}", daemon=True).start()
        return proc.pid

    def _start_pooled(self) -> subprocess.Popen:
        full_env = dict(os.environ)
        full_env["PYTHONUNBUFFERED"] = "1"
        full_env["DET_POOL_PRELOAD"] = ",".join(self._preload)
        return subprocess.Popen(
            [sys.executable, "-m", "determined.harness._rest_host", "--pooled"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.PIPE,
            env=full_env, start_new_session=True,
        )

    def _take_warm(self) -> subprocess.Popen:
        with self._lock:
            while self._idle:
                proc = self._idle.pop(0)
                if proc.poll() is None:
                    return proc
        return self._start_pooled()

    def _keep_pool(self) -> None:
        """Keep as many idle processes as there are slots (started one at a time)."""
        while not self._closed:
            with self._lock:
                self._idle = [p for p in self._idle if p.poll() is None]
                missing = self.slots - len(self._idle)
            if missing > 0 and not self._closed:
                proc = self._start_pooled()
                with self._lock:
                    if self._closed:
                        _kill_group(proc)
                    else:
                        self._idle.append(proc)
                continue
            self._refill.wait(5.0)
            self._refill.clear()

    def kill(self, trial_id: int) -> None:
        """SIGKILL the trial's whole process group (no-op if it is gone)."""
        with self._lock:
            proc = self._procs.get(trial_id)
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def pid(self, trial_id: int) -> Optional[int]:
        with self._lock:
            proc = self._procs.get(trial_id)
        return None if proc is None else proc.pid

    def close(self) -> None:
        """Kill every trial process and stop shipping logs."""
        self._closed = True  # exits from now on are the master's own doing
        self._refill.set()
        with self._lock:
            ids = list(self._procs)
            idle, self._idle = self._idle, []
        for proc in idle:
            _kill_group(proc)
        for trial_id in ids:
            self.kill(trial_id)
        self._lines.put(None)
        self._shipper.join(5)

    # -- threads ------------------------------------------------------------------------

    def _read(self, trial_id: int, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            self._lines.put((trial_id, raw.decode("utf-8", errors="replace").rstrip("\n")))
        code = proc.wait()
        done = threading.Event()
        self._lines.put((trial_id, done))  # type: ignore[arg-type]
        done.wait(5)  # its lines are stored before the exit is handled
        with self._lock:
            self._procs.pop(trial_id, None)
        if not self._closed:
            self._on_exit(trial_id, code)

    def _ship_logs(self) -> None:
        while True:
            item = self._lines.get()
            if item is None:
                return
            batch: Dict[int, List[str]] = {}
            markers: List[threading.Event] = []
            deadline = time.monotonic() + 0.1
            while item is not None:
                trial_id, line = item
                if isinstance(line, threading.Event):
                    markers.append(line)
                else:
                    batch.setdefault(trial_id, []).append(line)
                timeout = deadline - time.monotonic()
                if timeout <= 0:
                    break
                try:
                    item = self._lines.get(timeout=timeout)
                except queue.Empty:
                    break
            for trial_id, lines in batch.items():
                try:
                    self._log_sink(trial_id, lines)
                except Exception as e:  # a log write must never stop the shipper
                    print(f"det-master: could not store logs of trial {trial_id}: {e}",
                          file=sys.stderr)
            for marker in markers:
                marker.set()
            if item is None:
                return


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        pass
