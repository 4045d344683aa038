"""Checkpoint rules of the lifecycle: what a checkpoint id may be, when a report repeats
or contradicts a known checkpoint, which checkpoints the storage policy keeps and which
one is the best. Pure functions over the core's checkpoint entries
(uuid -> {request_id, batches, order, metric, deleted, content})."""

from __future__ import annotations

import hashlib
import json
import uuid as uuidlib
from typing import Any, Dict, Iterable, List, Mapping, Optional

from determined.common.entrypoint import steps_text
from determined.config import MetricOrder
from determined.engine._states import EngineError
from determined.storage._gc import CheckpointRecord, checkpoints_to_keep

__all__ = ["best_checkpoint", "check_checkpoint_id", "content_key", "garbage", "is_repeat"]


def check_checkpoint_id(uuid: Any) -> str:
    """``uuid`` if it is a checkpoint id (a UUID in its canonical form), else EngineError
    (a checkpoint id names a directory: no path tricks)."""
    try:
        ok = isinstance(uuid, str) and str(uuidlib.UUID(uuid)) == uuid.lower()
    except ValueError:
        ok = False
    if not ok:
        raise EngineError(f"Expected a checkpoint id in UUID form "
                          f"(xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx). Received: {uuid!r}")
    return uuid


def content_key(resources: Mapping[str, int], framework: str, format: str) -> str:
    """A short digest of what a checkpoint report says it holds (kept in snapshots
    instead of the file list)."""
    text = json.dumps([sorted(resources.items()), framework, format])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def is_repeat(uuid: str, known: Optional[Mapping[str, Any]], request_id: int, batches: int,
              content: str, unit: str = "batch") -> bool:
    """True if the report of ``uuid`` repeats a known checkpoint (a retried request),
    False if ``uuid`` is new; EngineError if it contradicts the known one (another
    trial, step count, framework, format or files). ``unit``: what steps count."""
    if known is None:
        return False
    said = (known["request_id"], known["batches"], known.get("content", content))
    if said == (request_id, batches, content):
        return True
    raise EngineError(f"Checkpoint {uuid} was already reported with other content: by trial "
                      f"request id {known['request_id']} at {steps_text(known['batches'], unit)}"
                      f"{'' if said[2] == content else ' with other files, framework or format'}"
                      f"; this report says request id {request_id} at {steps_text(batches, unit)}")


def _policy_int(policy: Mapping[str, Any], key: str, default: int) -> int:
    value = policy.get(key)
    return default if value is None else int(value)


def garbage(checkpoints: Mapping[str, Dict[str, Any]], protected: Iterable[str],
            policy: Mapping[str, Any], smaller_is_better: bool) -> List[str]:
    """Checkpoints the storage policy (save_experiment_best, save_trial_best,
    save_trial_latest) does not keep, oldest first; ``protected`` (warm-start sources)
    stay; NaN metrics count as unvalidated."""
    live = {u: c for u, c in checkpoints.items() if not c["deleted"]}
    records = [CheckpointRecord(u, c["request_id"], c["order"], c["metric"])
               for u, c in live.items()]
    keep = checkpoints_to_keep(
        records, _policy_int(policy, "save_experiment_best", 0) or 0,
        _policy_int(policy, "save_trial_best", 1), _policy_int(policy, "save_trial_latest", 1),
        smaller_is_better, set(protected))
    return sorted((u for u in live if u not in keep), key=lambda u: live[u]["order"])


def best_checkpoint(checkpoints: Mapping[str, Dict[str, Any]],
                    smaller_is_better: bool) -> Optional[str]:
    """The kept checkpoint with the best metric (else the newest kept one)."""
    live = [(u, c) for u, c in checkpoints.items() if not c["deleted"]]
    order = MetricOrder(smaller_is_better)
    scored = [(u, c) for u, c in live if order.comparable(c["metric"])]
    if scored:
        return min(scored, key=lambda uc: (order.key(uc[1]["metric"]), -uc[1]["order"]))[0]
    return max(live, key=lambda uc: uc[1]["order"])[0] if live else None
