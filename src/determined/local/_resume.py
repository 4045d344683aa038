"""``det experiment resume --local ID``: continue a local search from its snapshot."""

from __future__ import annotations

import os
from typing import Optional

from rich.console import Console

from determined import engine
from determined.common.console import TrimmedConsole
from determined.errors import DeterminedError
from determined.local._driver import LocalDriver
from determined.local._pool import start_fork_server, trial_frameworks
from determined.local._result import ExperimentResult
from determined.local._store import LocalStore, db_path, default_local_dir, open_store
from determined.master.db import NotFoundError

__all__ = ["resume_local_experiment"]


def resume_local_experiment(experiment_id: int, slots: int = 1, local_dir: Optional[str] = None,
                            console: Optional[Console] = None,
                            show_progress: bool = True) -> ExperimentResult:
    """Continue local experiment ``experiment_id`` after its driver was interrupted
    (Ctrl-C or ``kill -9``): the core and searcher from their last snapshot, each trial
    from its latest checkpoint. The search ends as an uninterrupted one would have.

    Raises:
        DeterminedError: no such experiment, it has ended, or it has no snapshot.
    """
    from determined.local._run import drive

    console = console or TrimmedConsole()
    local_dir = os.path.abspath(local_dir or default_local_dir())
    db = open_store(local_dir)
    try:
        try:
            exp = db.get_experiment(experiment_id)
        except NotFoundError:
            raise DeterminedError(f"local experiment {experiment_id} cannot be resumed: "
                                  f"there is no such experiment in {local_dir}") from None
        if exp.state in ("COMPLETED", "CANCELED", "ERROR"):
            raise DeterminedError(f"local experiment {experiment_id} cannot be resumed: it "
                                  f"has ended ({exp.state})")
        found = db.get_searcher_snapshot(experiment_id)
        snapshot = found.snapshot if found is not None else {}
        if found is None:
            raise DeterminedError(f"local experiment {experiment_id} cannot be resumed: it "
                                  "stopped before it saved its first snapshot (or an older "
                                  "version ran it); run it again with `det experiment create`")
        if snapshot.get("version") != engine.SNAPSHOT_VERSION or "trials" not in snapshot:
            raise DeterminedError(f"local experiment {experiment_id} has no experiment snapshot "
                                  "(it ran with an older version); it cannot be resumed")
        model_dir = (snapshot.get("local") or {}).get("model_dir")
        if not model_dir or not os.path.isdir(model_dir):
            raise DeterminedError(f"local experiment {experiment_id} cannot be resumed: its "
                                  f"model directory {model_dir!r} is gone")
    except BaseException:
        db.close()
        raise
    start_fork_server(trial_frameworks(exp.config, model_dir))
    store = LocalStore(db, local_dir, experiment_id)
    try:
        driver = LocalDriver(exp.config, model_dir, experiment_id, store,
                             exp.config["checkpoint_storage"], slots=slots)
        driver.restore(snapshot)
    except BaseException:
        store.close()
        raise
    console.print(f"Resuming experiment {experiment_id} from its snapshot; records in "
                  f"{db_path(local_dir)}")
    return drive(console, driver, exp.config, store, show_progress)
