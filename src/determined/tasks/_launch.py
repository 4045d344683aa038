"""Starting a task's process: the steps the master's embedded agent and a remote agent
share (:mod:`determined.master.tasks._manager`, :mod:`determined.agent._agent`).

A task runs in ``<task_dir>/work`` (its uploaded context), in a session of its own
(killing it kills everything it started), and dies with the thread that started it
(``PR_SET_PDEATHSIG``): that thread reads its output until it exits. Services
(notebooks, shells, TensorBoards) listen on ``host:port`` -- loopback, or the remote
agent's own address -- reached only through the master's proxy; they accept only
requests carrying the task's token (the proxy adds it).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from determined._procs import kill_leftovers, read_line_batches, set_parent_death_signal
from determined.common.api import unpack_context

__all__ = ["TaskProcess", "free_port", "link_mounts", "prepare_dirs", "task_command",
           "task_from_command"]

#: Seconds between SIGTERM and SIGKILL when a task is killed.
KILL_GRACE = 3.0
#: Kinds that serve HTTP or websockets behind ``/proxy/<task-id>/``.
SERVICE_KINDS = ("notebook", "shell", "tensorboard")

def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def link_mounts(mounts: Sequence[Sequence[str]], work: str) -> None:
    """Each ``(host_path, relative_path)`` of a task's ``bind_mounts`` (validated by the
    master) as a symbolic link in the working directory ``work`` (no containers here);
    a clear error naming the mount otherwise."""
    root = os.path.realpath(work)
    for i, (host, relative) in enumerate(mounts):
        label = f"bind_mounts[{i}] ({host} -> {relative})"
        if not os.path.exists(host):
            raise ValueError(f"{label}: host_path {host} does not exist on this machine")
        path = os.path.join(work, relative)
        if os.path.lexists(path):
            raise ValueError(f"{label}: {relative} already exists in the task's directory "
                             "(from its context); choose another container path")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not (os.path.realpath(os.path.dirname(path)) + os.sep).startswith(root + os.sep):
            raise ValueError(f"{label}: {relative} leaves the task's directory")
        os.symlink(host, path)


def prepare_dirs(task_dir: str, context: Optional[bytes],
                 spec: Optional[Dict[str, Any]] = None,
                 mounts: Sequence[Sequence[str]] = ()) -> str:
    """Create ``task_dir/work`` holding the unpacked ``context`` and the ``mounts`` (see
    :func:`link_mounts`), and write ``spec`` (a TensorBoard's runs) as
    ``task_dir/spec.json``; returns the working directory."""
    work = os.path.join(task_dir, "work")
    os.makedirs(work, exist_ok=True)
    if context:
        unpack_context(context, work)
    link_mounts(mounts, work)
    if spec is not None:
        with open(os.path.join(task_dir, "spec.json"), "w", encoding="utf-8") as f:
            json.dump(spec, f)
    return work


def task_command(kind: str, config: Dict[str, Any], task_id: str, task_dir: str,
                 host: str, port: Optional[int], token: str, master_url: str,
                 env_vars: Dict[str, str]) -> Tuple[List[str], Dict[str, str]]:
    """The argv and environment of a ``kind`` task (``config`` validated before;
    ``env_vars`` from its ``environment.environment_variables``)."""
    work = os.path.join(task_dir, "work")
    env = dict(os.environ)
    env.update(env_vars)
    env.update({"DET_TASK_ID": task_id, "DET_TASK_TYPE": kind, "DET_MASTER": master_url,
                "PYTHONUNBUFFERED": "1", "HISTFILE": os.path.join(task_dir, ".history")})
    env.pop("DET_TRIAL_TOKEN", None)
    env.pop("DET_TASK_TOKEN", None)
    prefix = f"/proxy/{task_id}"
    py = sys.executable
    if kind == "command":
        entry = config["entrypoint"]
        argv = ["/bin/sh", "-c", entry[0]] if len(entry) == 1 else list(entry)
    elif kind == "shell":
        env["DET_TASK_TOKEN"] = token  # the server checks it (the proxy sends it)
        argv = [py, "-m", "determined.tasks.shell", "--host", host, "--port", str(port),
                "--workdir", work]
    elif kind == "tensorboard":
        env["DET_TASK_TOKEN"] = token  # the server checks it (the proxy sends it)
        argv = [py, "-m", "determined.tasks.tensorboard", "--host", host, "--port", str(port),
                "--path-prefix", prefix, "--spec", os.path.join(task_dir, "spec.json"),
                "--logdir", os.path.join(task_dir, "logdir")]
    elif kind == "notebook":
        jupyter = os.path.join(task_dir, "jupyter")
        env.update({"JUPYTER_RUNTIME_DIR": os.path.join(jupyter, "runtime"),
                    "JUPYTER_CONFIG_DIR": os.path.join(jupyter, "config"),
                    "IPYTHONDIR": os.path.join(jupyter, "ipython")})
        argv = [py, "-m", "determined.tasks.notebook", "--no-browser", f"--ip={host}",
                f"--port={port}", "--ServerApp.port_retries=0",
                f"--ServerApp.base_url={prefix}/", f"--ServerApp.root_dir={work}",
                f"--IdentityProvider.token={token}",
                "--ServerApp.allow_origin=*",
                f"--LabApp.workspaces_dir={os.path.join(jupyter, 'workspaces')}",
                f"--LabApp.user_settings_dir={os.path.join(jupyter, 'settings')}"]
        if os.geteuid() == 0:  # containers and CI run as root
            argv.append("--allow-root")
    else:  # validated before
        raise ValueError(f"Expected a task kind. Received: {kind!r}")
    return argv, env


def task_from_command(command: Dict[str, Any], task_dir: str, host: str, master_url: str,
                      env_vars: Dict[str, str]) -> Tuple[List[str], Dict[str, str], str,
                                                         Optional[int]]:
    """Prepare ``task_dir`` for a task the master sent (its ``launch_task`` command:
    ``task_id``, ``kind``, ``config``, ``token``, ``env``, base64 ``context``,
    ``mounts``, ``spec``); returns the argv, environment, working directory and, for a
    service, the port it will listen on at ``host``. ``env_vars`` (the agent's or
    node's own: slot ids, visible devices) are added to the task's environment."""
    kind = str(command["kind"])
    context = base64.b64decode(command["context"]) if command.get("context") else None
    work = prepare_dirs(task_dir, context, command.get("spec"), command.get("mounts") or ())
    port = free_port(host) if kind in SERVICE_KINDS else None
    argv, env = task_command(kind, command["config"], str(command["task_id"]), task_dir,
                             host, port, str(command["token"]), master_url,
                             dict(command.get("env") or {}, **env_vars))
    return argv, env, work, port


class TaskProcess:
    """One task process: started in a session of its own, its output read line by line.

    Call :meth:`pump` from the thread that called :meth:`start` (the process dies
    with that thread).
    """

    def __init__(self, argv: List[str], env: Dict[str, str], cwd: str):
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True, preexec_fn=set_parent_death_signal)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def pump(self, emit: Callable[[List[str]], None]) -> int:
        """Pass output lines to ``emit`` in batches (at most 0.2 s or 200 lines old)
        until the process exits, then end what it left in its group; returns its exit
        code (negative: a signal)."""
        assert self.proc.stdout is not None
        read_line_batches(self.proc.stdout.fileno(), emit, max_age=0.2,
                          exited=lambda: self.proc.poll() is not None)
        code = self.proc.wait()
        kill_leftovers(self.proc.pid)
        return code

    def signal(self, sig: int) -> None:
        """Signal the task's whole process group (no-op once it exited)."""
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self, grace: float = KILL_GRACE) -> None:
        """SIGTERM now, SIGKILL after ``grace`` seconds."""
        self.signal(signal.SIGTERM)
        timer = threading.Timer(grace, self.signal, args=(signal.SIGKILL,))
        timer.daemon = True
        timer.start()
