"""Where a trial's TensorBoard event files live, locally and in checkpoint storage (SPEC 8).

Locally: ``$DET_TENSORBOARD_DIR`` (set per trial by the platform), with ``-<rank>``
appended for non-chief ranks. In checkpoint storage:
``<storage root>/tensorboard/experiment/<exp_id>/trial/<trial_id>/``.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Optional

__all__ = ["ENV_VAR", "get_base_path", "get_sync_path", "prepare_base_path", "STORAGE_DIR"]

#: The environment variable naming the local event-file directory of a trial process.
ENV_VAR = "DET_TENSORBOARD_DIR"
#: The directory under the checkpoint storage root holding every trial's event files.
STORAGE_DIR = "tensorboard"


#: Whether :func:`prepare_base_path` chose this process's directory (a temporary one,
#: removed once everything in it is synced).
created_here = False
#: The directory :func:`prepare_base_path` last chose itself (None: never).
_chosen_here: Optional[str] = None


def get_base_path(rank: int = 0) -> str:
    """The local directory this process writes event files to (every writer uses it)."""
    base = os.environ.get(ENV_VAR) or os.path.join(tempfile.gettempdir(), "tensorboard")
    return base if rank == 0 else f"{base}-{rank}"


def prepare_base_path(env: Any) -> str:
    """Give the trial process a per-trial event directory unless the platform set one.

    Several trials share an agent's ``/tmp``, so the default is
    ``<tmp>/det-tensorboard/exp-<id>-trial-<id>-<pid>``.
    """
    global created_here, _chosen_here
    current = os.environ.get(ENV_VAR)
    # A value this function set for an earlier trial of the same process (in-process
    # runs) is not the platform's choice: choose again, or a later trial would write
    # into (and then remove) the earlier one's directory.
    created_here = not current or current == _chosen_here
    if created_here:
        _chosen_here = os.path.join(
            tempfile.gettempdir(), "det-tensorboard",
            f"exp-{env.experiment_id}-trial-{env.trial_id}-{os.getpid()}")
        os.environ[ENV_VAR] = _chosen_here
    return get_base_path(getattr(getattr(env, "distributed", None), "rank", 0))


def get_sync_path(experiment_id: int, trial_id: int) -> str:
    """The trial's event directory relative to the checkpoint storage root."""
    return os.path.join(STORAGE_DIR, "experiment", str(experiment_id), "trial", str(trial_id))
