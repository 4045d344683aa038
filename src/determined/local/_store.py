"""Where local experiments keep their records: the master's database schema, in a
SQLite file of the local directory, so every read command (``det e describe --local``,
``det t logs --local``, ...) serves local runs with the master's own queries.

Layout under the local directory (default ``~/.determined/local``, or
``$DET_LOCAL_DIR``)::

    local.db                      experiments, trials, metrics, checkpoints, logs and
                                  each experiment's core snapshot (the master's schema)
    checkpoints/<uuid>/           checkpoints (unless the config names storage)
    experiments/<id>/
        trials/<trial id>.log     each trial process's output (also in local.db)
        tensorboard/trial_<id>/   TensorBoard event files

A directory written by an older version (``experiments/<id>/experiment.json`` and
``metrics.jsonl``) is imported into ``local.db`` the first time it is opened
(``_legacy.py``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Dict, List, Optional

if TYPE_CHECKING:  # imported where used: the database costs a second to import
    from determined.master.db import Store

__all__ = ["DB_NAME", "LocalStore", "OWNER", "db_path", "default_local_dir", "open_store"]

DB_NAME = "local.db"
#: The user local experiments belong to (one of the two every database starts with).
OWNER = "determined"


def default_local_dir() -> str:
    return os.environ.get("DET_LOCAL_DIR") or os.path.join(
        os.path.expanduser("~"), ".determined", "local"
    )


def db_path(local_dir: str) -> str:
    return os.path.join(os.path.abspath(local_dir), DB_NAME)


def open_store(local_dir: str) -> Store:
    """The local directory's database, created or migrated to the current schema (and
    an older version's files imported) on first use."""
    from determined.master.db import Store

    local_dir = os.path.abspath(local_dir)
    fresh = not os.path.exists(db_path(local_dir))
    os.makedirs(local_dir, exist_ok=True)
    store = Store("sqlite:///" + db_path(local_dir))
    try:
        store.upgrade()
        if fresh:
            from determined.local._legacy import import_legacy

            import_legacy(store, local_dir, OWNER)
    except BaseException:
        store.close()
        raise
    return store


class LocalStore:
    """The records of one local experiment: ``store`` (the database) and the files of
    its directory. Trial processes write their output to a file each; :meth:`pump`
    copies new complete lines into the database."""

    def __init__(self, store: Store, local_dir: str, experiment_id: int):
        self.store = store
        self.local_dir = os.path.abspath(local_dir)
        self.experiment_id = experiment_id
        self.dir = os.path.join(self.local_dir, "experiments", str(experiment_id))
        os.makedirs(os.path.join(self.dir, "trials"), exist_ok=True)
        self._offsets: Dict[int, int] = {}
        self._model_dir: Optional[str] = None

    def name_user_files(self, model_dir: str) -> None:
        """From now on, trial log lines stored name ``model_dir``, the user's, in place
        of a trial's working copy (removed once its process ends) where the log view
        maps paths (a traceback's frame and exception lines: ``common.log_view``); the
        rest stay as written."""
        self._model_dir = model_dir

    def _stored_lines(self, trial_id: int, lines: List[str]) -> List[str]:
        if self._model_dir is None:
            return lines
        from determined.common.log_view import shown_line

        return [shown_line(line, self._model_dir) for line in lines]

    def trial_log_path(self, trial_id: int) -> str:
        return os.path.join(self.dir, "trials", f"{trial_id}.log")

    def log_line(self, trial_id: int, line: str) -> None:
        """Append one line of the platform's own to the trial's log."""
        with open(self.trial_log_path(trial_id), "a", encoding="utf-8") as f:
            f.write(line.rstrip("\n") + "\n")
        self.pump(trial_id)

    def resume_logs(self, trial_id: int) -> None:
        """Continue copying a trial's log after the lines the database already has
        (a resumed experiment: its driver may have died between a write and a copy)."""
        stored = len(self.store.get_logs(trial_id, limit=2**62))
        offset = 0
        try:
            with open(self.trial_log_path(trial_id), "rb") as f:
                for _ in range(stored):
                    line = f.readline()
                    if not line.endswith(b"\n"):
                        break
                    offset += len(line)
        except OSError:
            pass
        self._offsets[trial_id] = offset

    def pump(self, trial_id: int, final: bool = False) -> int:
        """Store the trial's new complete log lines (``final``: an unterminated last
        line too, its process has ended); returns how many."""
        offset = self._offsets.get(trial_id, 0)
        try:
            with open(self.trial_log_path(trial_id), "rb") as f:
                f.seek(offset)
                data = f.read()
        except OSError:
            return 0
        end = len(data) if final else data.rfind(b"\n") + 1
        if end <= 0:
            return 0
        lines: List[str] = data[:end].decode("utf-8", errors="replace").splitlines()
        self._offsets[trial_id] = offset + end
        if lines:
            self.store.add_logs(trial_id, self._stored_lines(trial_id, lines))
        return len(lines)

    def pump_all(self, final: bool = False) -> None:
        for trial_id in list(self._offsets):
            self.pump(trial_id, final)

    def watch(self, trial_id: int) -> None:
        """Copy this trial's log from now on (from its start unless resumed)."""
        self._offsets.setdefault(trial_id, 0)

    def close(self) -> None:
        try:
            self.pump_all(final=True)
        finally:
            self.store.close()

