"""An experiment core's state as versioned JSON-able data, and the way back.

A snapshot is taken after every event the searcher hears (the adapter saves it on
``SaveSnapshot``); :func:`restore` continues exactly where it was taken. An ended
trial's entry is built once (:class:`~determined.common.frozen_entries.FrozenEntries`).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Dict, Mapping, Type

from determined import searcher as searchers
from determined.engine._states import TERMINAL, EngineError, ExperimentState
from determined.engine._trial import CoreTrial

if TYPE_CHECKING:
    from determined.engine._core import ExperimentCore

__all__ = ["SNAPSHOT_VERSION", "snapshot", "restore"]

SNAPSHOT_VERSION = 1


def snapshot(core: "ExperimentCore") -> Dict[str, Any]:
    """All of ``core``'s state as JSON-able data."""
    return {
        "version": SNAPSHOT_VERSION,
        "state": core.state.value,
        "searcher": core.searcher.snapshot(),
        "shutdown": core.shutdown.to_dict() if core.shutdown else None,
        "best_value": core.best_value,
        "killed": core.killed,
        "source_checkpoint": core.source_checkpoint,
        "reason": core.reason,
        "events": core.events,
        "seq": core._seq,
        "checkpoints": {u: dict(c) for u, c in core.checkpoints.items()},
        "trials": [core._frozen.entry(t.request_id, t.state in TERMINAL, t.to_dict)
                   for t in core.trials.values()],
    }


def restore(cls: Type["ExperimentCore"], config: Mapping[str, Any],
            data: Mapping[str, Any]) -> "ExperimentCore":
    """A core of class ``cls`` for ``config`` continuing from the snapshot ``data``."""
    if data.get("version") != SNAPSHOT_VERSION:
        raise EngineError(f"Expected an experiment snapshot of version {SNAPSHOT_VERSION}. "
                          f"Received: version={data.get('version')!r}")
    core = cls(config, data.get("source_checkpoint"))
    core.searcher = searchers.Searcher.restore(core.config, data["searcher"])
    core.state = ExperimentState(data["state"])
    if data.get("shutdown"):
        core.shutdown = searchers.Shutdown.from_dict(data["shutdown"])
    core.best_value = data.get("best_value")
    core.killed = bool(data.get("killed"))
    core.reason = data.get("reason", "")
    core.events = int(data.get("events", 0))
    core._seq = int(data.get("seq", 0))
    core.checkpoints = copy.deepcopy(dict(data.get("checkpoints", {})))
    for d in data["trials"]:
        t = CoreTrial.from_dict(d)
        core.trials[t.request_id] = t
    return core
