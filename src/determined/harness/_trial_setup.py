"""What each upstream 0.13 trial's container gave it, done at trial-process start.

Upstream ran every trial in a container of its own: a fresh copy of the model
directory as working directory, ``environment.environment_variables`` exported,
``startup-hook.sh`` sourced before the trial, ``bind_mounts`` mounted. Here the trial
process does the same to itself before loading user code
(:func:`prepare_trial_process`, called by ``harness._ranks.distributed_trial``,
which every launcher runs), so local runs, the embedded agent and remote agents
all behave alike:

- working directory: a copy of the model directory under ``$DET_WORKDIR_ROOT``
  (default ``<tmp>/det-workdirs``), fresh at each trial-process start (a restart
  gets a new one, as a new container did), removed when the process exits (or by
  its starter once it was killed: :mod:`determined.common.scratch`);
- environment variables: the list, or its ``cpu``/``gpu`` entry (``gpu`` when the
  process sees a GPU through ``CUDA_VISIBLE_DEVICES``);
- ``startup-hook.sh``: sourced by ``bash`` in the working directory; its output goes
  to the trial's log and variables it exports reach the trial; a non-zero exit fails
  the trial with that output;
- ``bind_mounts``: ``host_path`` made reachable at ``container_path`` by a symbolic
  link: a relative ``container_path`` inside the working directory, an absolute one
  where this process may create it (else a clear error naming the mount).
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import os
import re
import shutil
import subprocess
import sys
from typing import Any, Dict, List, Mapping, Optional

from determined.common import scratch
from determined.errors import InvalidModelDefError
from determined.harness._env import TrialEnv

__all__ = ["prepare_trial_process", "STARTUP_HOOK", "user_paths"]

logger = logging.getLogger("determined")

STARTUP_HOOK = "startup-hook.sh"
_HOOK_OUTPUT_TAIL = 4000


def _make_workdir(env: TrialEnv, exclude: List[str]) -> str:
    from determined.storage import copy_code

    os.makedirs(scratch.workdir_root(), exist_ok=True)
    scratch.sweep_dead_owners()  # what trial processes killed hard left
    workdir = scratch.workdir_path(env.experiment_id, env.trial_id)
    if os.path.exists(workdir):
        shutil.rmtree(workdir)
    copy_code(env.model_dir, workdir, exclude=exclude)
    me = os.getpid()
    atexit.register(lambda: os.getpid() == me and shutil.rmtree(workdir, ignore_errors=True))
    return workdir


def user_paths(text: str, model_dir: str) -> str:
    """``text`` (a traceback, an error) with every trial working directory's path
    (``<root>/exp<E>-trial<T>-pid<P>[-of<owner>]``, removed when its process exits: see
    :mod:`determined.common.scratch`) replaced by
    ``model_dir``, the directory the user gave, whose files the copy came from.

    Example:
        >>> user_paths('File "/tmp/det-workdirs/exp1-trial2-pid9/model_def.py", line 3',
        ...            "/home/me/mnist")  # doctest: +SKIP
        'File "/home/me/mnist/model_def.py", line 3'
    """
    root = scratch.workdir_root()
    roots = sorted({root, os.path.realpath(root)}, key=len, reverse=True)
    pattern = "(?:" + "|".join(re.escape(r) for r in roots) + ")/" + scratch.WORKDIR_NAME
    return re.sub(pattern, lambda _: model_dir.rstrip(os.sep) or os.sep, text)


def _uses_gpu() -> bool:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    return bool(visible) and visible not in ("-1", "none", "NoDevFiles")


def environment_variables(config: Mapping[str, Any]) -> Dict[str, str]:
    """``environment.environment_variables`` of ``config`` for this process."""
    spec = (config.get("environment") or {}).get("environment_variables") or []
    if isinstance(spec, dict):
        spec = spec.get("gpu" if _uses_gpu() else "cpu") or []
    out: Dict[str, str] = {}
    for entry in spec:
        name, _, value = str(entry).partition("=")
        out[name] = value
    return out


def _run_startup_hook(workdir: str) -> None:
    """Source ``startup-hook.sh`` in ``workdir``; import what it exported; relay its output."""
    env_file = os.path.join(workdir, ".det-startup-hook-env")
    script = f'set -e; source ./{STARTUP_HOOK}; env -0 > "$DET_HOOK_ENV_FILE"'
    proc = subprocess.run(
        ["bash", "-c", script], cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        env={**os.environ, "DET_HOOK_ENV_FILE": env_file},
    )
    output = proc.stdout.decode("utf-8", "replace")
    if output:
        sys.stdout.write(output if output.endswith("\n") else output + "\n")
        sys.stdout.flush()
    if proc.returncode != 0:
        tail = output[-_HOOK_OUTPUT_TAIL:].rstrip() or "(no output)"
        raise InvalidModelDefError(
            f"{STARTUP_HOOK} failed with exit code {proc.returncode} in {workdir}; its "
            f"output:\n{tail}")
    try:
        with open(env_file, "rb") as f:
            entries = f.read().split(b"\0")
    finally:
        try:
            os.remove(env_file)
        except OSError:
            pass
    for entry in entries:
        name, sep, value = entry.decode("utf-8", "replace").partition("=")
        if sep and name not in ("DET_HOOK_ENV_FILE", "PWD", "OLDPWD", "SHLVL", "_"):
            if os.environ.get(name) != value:
                os.environ[name] = value


def _bind_mount(mount: Mapping[str, Any], workdir: str, index: int) -> None:
    host, target = str(mount.get("host_path")), str(mount.get("container_path"))
    label = f"bind_mounts[{index}] (host_path {host!r}, container_path {target!r})"
    if not os.path.exists(host):
        raise InvalidModelDefError(f"{label}: host_path does not exist on this machine")
    path = target if os.path.isabs(target) else os.path.join(workdir, target)
    path = os.path.normpath(path)
    if not os.path.isabs(target) and not (path + os.sep).startswith(workdir + os.sep):
        raise InvalidModelDefError(f"{label}: a relative container_path must stay inside the "
                                   "trial's working directory")
    if os.path.islink(path):
        if os.path.realpath(path) == os.path.realpath(host):
            return  # already there (another trial process of this machine made it)
        if not os.path.isabs(target):
            os.remove(path)
    if os.path.isabs(target) and os.path.exists(path) and os.path.samefile(path, host):
        return  # the host directory is already at container_path (e.g. /data -> /data)
    if os.path.lexists(path):
        raise InvalidModelDefError(
            f"{label}: {path} already exists and is not a link to host_path; choose another "
            "container_path")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.symlink(os.path.abspath(host), path)
    except OSError as e:
        raise InvalidModelDefError(
            f"{label}: cannot create {path} ({e.strerror}); without containers an absolute "
            "container_path must be creatable by the trial process (use a relative path "
            "to place it in the trial's working directory)") from None


def prepare_trial_process(env: TrialEnv, storage_config: Optional[Mapping[str, Any]] = None
                          ) -> TrialEnv:
    """Give this trial process its working directory, variables, hook and mounts; return
    the environment to run with (``model_dir`` is the working directory).

    Call once per trial process, before user code is loaded; the process's working
    directory changes to the new one.
    """
    if not env.managed or os.environ.get("DET_TRIAL_WORKDIR") == os.getcwd():
        return env  # in-process runs, or already done in this process
    exclude = []
    host_path = (storage_config or {}).get("host_path")
    if host_path:
        exclude.append(os.path.join(host_path, (storage_config or {}).get("storage_path") or ""))
        exclude.append(host_path)
    workdir = os.path.realpath(_make_workdir(env, exclude))
    os.environ.update(environment_variables(env.experiment_config))
    os.environ["DET_TRIAL_WORKDIR"] = workdir
    os.chdir(workdir)
    for i, mount in enumerate(env.experiment_config.get("bind_mounts") or []):
        _bind_mount(mount, workdir, i)
    if os.path.isfile(os.path.join(workdir, STARTUP_HOOK)):
        _run_startup_hook(workdir)
    logger.info("trial %s runs in %s", env.trial_id, workdir)
    return dataclasses.replace(env, model_dir=workdir)
