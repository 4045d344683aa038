"""``det experiment resume --local ID``: continue a local search from its snapshot."""

from __future__ import annotations

import json
import os
from typing import Optional

from rich.console import Console

from determined.errors import DeterminedError
from determined.local._driver import ExperimentResult, LocalDriver
from determined.local._store import LocalStore, allocate_ids, default_local_dir

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

    console = console or Console()
    local_dir = os.path.abspath(local_dir or default_local_dir())
    exp_dir = os.path.join(local_dir, "experiments", str(experiment_id))
    try:
        with open(os.path.join(exp_dir, "experiment.json"), encoding="utf-8") as f:
            state = json.load(f)
        with open(os.path.join(exp_dir, "searcher.json"), encoding="utf-8") as f:
            snapshot = json.load(f)
    except (OSError, ValueError) as e:
        raise DeterminedError(f"local experiment {experiment_id} in {local_dir} cannot be "
                              f"resumed: {e}") from None
    if state.get("state") == "COMPLETED":
        raise DeterminedError(f"local experiment {experiment_id} has already COMPLETED")
    if snapshot.get("version") != 1 or "trials" not in snapshot:
        raise DeterminedError(f"local experiment {experiment_id} has no experiment snapshot "
                              "(it ran with an older version); it cannot be resumed")
    store = LocalStore(local_dir, experiment_id)
    driver = LocalDriver(
        state["config"], state["model_dir"], experiment_id, store, state["checkpoint_storage"],
        slots=slots, allocate_trial_id=lambda: allocate_ids(local_dir, trials=1)["trial"],
    )
    driver.restore(state, snapshot)
    console.print(f"Resuming experiment {experiment_id} from its snapshot; records in {store.dir}")
    return drive(console, driver, state["config"], store, show_progress)
