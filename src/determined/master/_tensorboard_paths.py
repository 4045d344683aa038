"""Where the trials of a master's experiments sync their TensorBoard event files.

Masters sharing one checkpoint storage each number experiments from 1, so a trial's
files go under its master's cluster id: ``tensorboard/<cluster id>/experiment/<E>/trial/<T>``
(:func:`determined.tensorboard.trial_sync_path`). Experiments created before that
keep ``tensorboard/experiment/<E>/trial/<T>``, where their files already are: their
trials write there when resumed, and TensorBoard tasks read them there. The first
experiment id of the owner's layout is kept in ``<data_dir>/tensorboard_owner_layout``,
written when a master of this version first starts (the next experiment id then).
"""

from __future__ import annotations

import os
from typing import Any

from determined.tensorboard import experiment_sync_path, trial_sync_path

__all__ = ["TensorboardPaths"]

MARKER = "tensorboard_owner_layout"


class TensorboardPaths:
    """A master's choice of each trial's event directory in checkpoint storage.

    Args:
        data_dir: the master's data directory (the marker file's).
        store: its records (their experiment ids, read once).
        owner: its cluster id.

    Example:
        >>> paths = TensorboardPaths(data_dir, store, cluster_id)  # doctest: +SKIP
        >>> paths.sync_path(1, 1)  # doctest: +SKIP
        'tensorboard/5b0e8c2e-.../experiment/1/trial/1'
    """

    def __init__(self, data_dir: str, store: Any, owner: str):
        self.owner = owner
        self.first_owned = _first_owned_experiment(data_dir, store)

    def sync_path(self, experiment_id: int, trial_id: int) -> str:
        """Trial ``trial_id`` of experiment ``experiment_id``'s event directory,
        relative to the checkpoint storage root."""
        return trial_sync_path(experiment_id, trial_id, self._owner_of(experiment_id))

    def experiment_path(self, experiment_id: int) -> str:
        """The directory of every event directory of experiment ``experiment_id`` (what
        deleting it removes), relative to the checkpoint storage root."""
        return experiment_sync_path(experiment_id, self._owner_of(experiment_id))

    def _owner_of(self, experiment_id: int) -> str:
        return self.owner if experiment_id >= self.first_owned else ""


def _first_owned_experiment(data_dir: str, store: Any) -> int:
    path = os.path.join(data_dir, MARKER)
    try:
        with open(path, encoding="utf-8") as f:
            return int(f.read().strip())
    except FileNotFoundError:
        pass
    first = 1 + max((e.id for e in store.list_experiments(include_archived=True)), default=0)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(f"{first}\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return first
