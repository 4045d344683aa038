"""Why pending trials and tasks wait, as the master's last scheduling pass saw it.

The reasons come from :func:`determined.master.scheduler.waiting_reasons` (pure); this
adapter keeps them for the API, logs a request once when it becomes impossible to
schedule, and says when a request can never fit at all (refused up front).
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Mapping, Optional, Set

from determined.master import scheduler
from determined.master.resource_managers import AGENT_ID

__all__ = ["WaitBook", "never_fits"]

logger = logging.getLogger("determined.master")


class WaitBook:
    """The reasons of the last pass, by scheduler task id (``trial-<id>``, ``task-<id>``).

    ``lock`` is the master's: :meth:`note` is called with it held, the readers take it.
    """

    def __init__(self, lock: Any):
        self._lock = lock
        self._waits: Dict[str, scheduler.Wait] = {}
        self._impossible: Set[str] = set()  # task ids logged as impossible to schedule

    def note(self, waits: Dict[str, scheduler.Wait]) -> None:
        """Keep this pass's reasons; log each task once when it becomes impossible."""
        for task_id, wait in waits.items():
            if wait.impossible and task_id not in self._impossible:
                trial_id = scheduler.trial_of_task(task_id)
                who = f"trial {trial_id}" if trial_id is not None else \
                    scheduler.group_title(task_id)
                logger.warning("%s cannot be scheduled: %s", who, wait.detail)
        self._impossible = {task_id for task_id, w in waits.items() if w.impossible}
        self._waits = waits

    def of(self, task_id: str) -> Optional[scheduler.Wait]:
        """Why the task waits, or None if it does not."""
        with self._lock:
            return self._waits.get(task_id)

    def all(self) -> Dict[str, scheduler.Wait]:
        with self._lock:
            return dict(self._waits)

    def by_experiment(self, experiments: Any, allocations: Mapping[str, Any]
                      ) -> Dict[int, scheduler.Wait]:
        """Per live experiment none of whose trials holds slots (``allocations``): why its
        first waiting trial waits. ``experiments.trial(id)`` gives ``(run, trial)``."""
        def run_of(trial_id: Optional[int]) -> Optional[int]:
            found = experiments.trial(trial_id) if trial_id is not None else None
            return found[0].id if found else None

        with self._lock:
            busy = {run_of(scheduler.trial_of_task(task_id)) for task_id in allocations}
            out: Dict[int, scheduler.Wait] = {}
            trials = sorted((trial_id, w) for trial_id, w in (
                (scheduler.trial_of_task(k), w) for k, w in self._waits.items())
                if trial_id is not None)
            for trial_id, wait in trials:
                exp_id = run_of(trial_id)
                if exp_id is not None and exp_id not in busy:
                    out.setdefault(exp_id, wait)
            return out


def never_fits(rm: Any, store: Any, field: str, slots: int) -> Optional[str]:
    """Why a request of ``slots`` (config ``field``) can never be scheduled, or None.

    Only where that is certain: the cluster is the embedded agent alone and no remote
    agent has ever registered (``rm`` a ``CompositeResourceManager``, ``store`` the
    master's). Elsewhere an agent may join, and the request waits, saying why."""
    if rm.ray is not None or rm.embedded is None or rm.remote.agents():
        return None
    if any(a.id != AGENT_ID for a in store.list_agents()):
        return None
    most = rm.embedded.slots
    if slots <= most:
        return None
    return (f"Expected {field} <= {most}: this cluster has {most} slot(s) (the master's "
            f"own agent alone; no remote agent has registered). Received: {field}={slots}")


