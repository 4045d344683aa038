"""Where a trial's TensorBoard event files live, locally and in checkpoint storage (SPEC 8).

Locally: ``$DET_TENSORBOARD_DIR`` (set per trial by the platform), with ``-<rank>``
appended for non-chief ranks. In checkpoint storage:
``<storage root>/tensorboard/<owner>/experiment/<exp_id>/trial/<trial_id>/``, where the
owner (``TrialEnv.owner``: the master's cluster id, a local records directory's id)
keeps apart the trials of two masters sharing one storage, which both number
experiments from 1. Trials without an owner, and those of a master's experiments
created before owners were added to the path (the master says so in
``TrialEnv.tensorboard_path``), use ``<storage root>/tensorboard/experiment/...``.

:func:`get_base_path` and :func:`get_sync_path` have upstream 0.13's parameters; the
platform itself uses :func:`local_event_dir` and :func:`trial_sync_path`.
"""

from __future__ import annotations

import os
import pathlib
import tempfile
from typing import Any, Dict, Optional

__all__ = ["ENV_VAR", "STORAGE_DIR", "env_sync_path", "experiment_sync_path", "get_base_path",
           "get_sync_path",
           "local_event_dir", "set_platform_dir",
           "prepare_base_path", "trial_sync_path"]

#: The environment variable naming the local event-file directory of a trial process.
ENV_VAR = "DET_TENSORBOARD_DIR"
#: Set with :data:`ENV_VAR` when :func:`prepare_base_path` chose it: the choosing pid.
_OWNER_VAR = "DET_TENSORBOARD_DIR_CHOSEN_BY"
#: The directory under the checkpoint storage root holding every trial's event files.
STORAGE_DIR = "tensorboard"


#: Whether :func:`prepare_base_path` chose this process's directory (a temporary one,
#: removed once everything in it is synced).
created_here = False
#: The directory :func:`prepare_base_path` last chose itself (None: never).
_chosen_here: Optional[str] = None


def local_event_dir(rank: int = 0) -> str:
    """The local directory this process writes event files to (every writer uses it)."""
    base = os.environ.get(ENV_VAR) or os.path.join(tempfile.gettempdir(), "tensorboard")
    return base if rank == 0 else f"{base}-{rank}"


def _process_rank() -> int:
    for name in ("DET_RANK", "HOROVOD_RANK"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


def get_base_path(checkpoint_config: Dict[str, Any], manager: bool = False) -> pathlib.Path:
    """The local directory of event files (upstream's signature).

    ``checkpoint_config["base_path"]`` set: ``<base_path>/tensorboard`` (as upstream).
    Else this trial's event directory (:func:`local_event_dir`): the chief's for
    ``manager=True`` (the syncing process), this rank's otherwise.
    """
    if not isinstance(checkpoint_config, dict):
        raise TypeError(f"Expected checkpoint_config to be a dict. Received: "
                        f"{checkpoint_config!r}")
    if checkpoint_config.get("base_path"):
        return pathlib.Path(checkpoint_config["base_path"], STORAGE_DIR)
    return pathlib.Path(local_event_dir(0 if manager else _process_rank()))


def set_platform_dir(path: str) -> None:
    """The platform chose ``path`` as this process's event directory (kept as is by
    :func:`prepare_base_path`, and never removed by the trial)."""
    os.environ[ENV_VAR] = path
    os.environ.pop(_OWNER_VAR, None)


def prepare_base_path(env: Any) -> str:
    """Give the trial process a per-trial event directory unless the platform set one.

    Several trials share an agent's ``/tmp``, so the default is
    ``<tmp>/det-tensorboard/exp-<id>-trial-<id>-<pid>``.
    """
    global created_here, _chosen_here
    current = os.environ.get(ENV_VAR)
    # A value this function chose is not the platform's: for an earlier trial of the
    # same process (in-process runs), or inherited from the process that started this
    # one (a test process, a fork server), it would make this trial write into (and
    # later remove) another trial's directory, and sync that one's files as its own.
    chosen_by = os.environ.get(_OWNER_VAR)
    created_here = not current or current == _chosen_here or (
        chosen_by is not None and chosen_by != str(os.getpid()))
    if created_here:
        _chosen_here = os.path.join(
            tempfile.gettempdir(), "det-tensorboard",
            f"exp-{env.experiment_id}-trial-{env.trial_id}-{os.getpid()}")
        os.environ[ENV_VAR] = _chosen_here
        os.environ[_OWNER_VAR] = str(os.getpid())
    return local_event_dir(getattr(getattr(env, "distributed", None), "rank", 0))


def experiment_sync_path(experiment_id: Any, owner: str = "") -> str:
    """The directory holding every trial's event directory of the experiment, relative to
    the checkpoint storage root (what deleting the experiment removes).

    >>> experiment_sync_path(3, "5b0e8c2e-1111-2222-3333-444455556666")
    'tensorboard/5b0e8c2e-1111-2222-3333-444455556666/experiment/3'
    >>> experiment_sync_path(3)
    'tensorboard/experiment/3'
    """
    if owner and (owner in (".", "..") or "/" in owner or "\\" in owner):
        raise ValueError(f"Expected an owner id without path separators. Received: {owner!r}")
    return os.path.join(STORAGE_DIR, *([owner] if owner else []), "experiment",
                        str(experiment_id))


def trial_sync_path(experiment_id: Any, trial_id: Any, owner: str = "") -> str:
    """The trial's event directory relative to the checkpoint storage root, under its
    ``owner`` where it has one.

    >>> trial_sync_path(3, 7, "5b0e8c2e-1111-2222-3333-444455556666")
    'tensorboard/5b0e8c2e-1111-2222-3333-444455556666/experiment/3/trial/7'
    >>> trial_sync_path(3, 7)
    'tensorboard/experiment/3/trial/7'
    """
    return os.path.join(experiment_sync_path(experiment_id, owner), "trial", str(trial_id))


def env_sync_path(env: Any) -> str:
    """A platform trial environment's (``TrialEnv``'s) event directory relative to the
    checkpoint storage root: the one its master chose (``tensorboard_path``), else
    :func:`trial_sync_path` under its owner."""
    chosen = getattr(env, "tensorboard_path", "")
    if chosen:
        return str(chosen)
    return trial_sync_path(env.experiment_id, env.trial_id, getattr(env, "owner", "") or "")


def get_sync_path(env: Any) -> pathlib.Path:
    """The trial's event directory relative to the checkpoint storage root, for ``env``
    (a :class:`determined.EnvContext`, or the platform's trial environment).

    Upstream prefixed it with the cluster id; here the cluster id (a trial's owner) goes
    under ``tensorboard/``: ``tensorboard/<owner>/experiment/<exp>/trial/<trial>``, or
    ``tensorboard/experiment/<exp>/trial/<trial>`` without one (see the module's notes).
    """
    trial_env = getattr(env, "_trial_env", None)  # an EnvContext made from a TrialEnv
    if trial_env is not None:
        env = trial_env
    if getattr(env, "tensorboard_path", ""):
        return pathlib.Path(env.tensorboard_path)
    owner = getattr(env, "owner", "") or getattr(env, "det_cluster_id", "") or ""
    exp = getattr(env, "det_experiment_id", None) or getattr(env, "experiment_id", None)
    trial = getattr(env, "det_trial_id", None) or getattr(env, "trial_id", None)
    if exp in (None, "") or trial in (None, ""):
        raise ValueError("Expected env to carry the experiment and trial ids "
                         "(det_experiment_id/det_trial_id or experiment_id/trial_id). "
                         f"Received: {env!r}")
    return pathlib.Path(trial_sync_path(exp, trial, str(owner)))
