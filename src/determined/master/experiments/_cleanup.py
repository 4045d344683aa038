"""Leftovers of checkpoint writes that never finished, removed at master start.

A trial killed while writing a checkpoint leaves a ``.partial-*`` scratch directory
(shared_fs writes there, then renames); one killed between the rename and its report
leaves a complete checkpoint no record names. Both are removed once they are older
than a grace period, since a trial on a remote agent may still be writing.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from typing import Any, Dict, Iterable, List, Optional, Set

from determined.engine import EngineError, check_checkpoint_id

__all__ = ["clean_checkpoint_root", "clean_checkpoint_roots", "GRACE_SECONDS"]

logger = logging.getLogger("determined.master")

#: Entries younger than this may belong to a writer that is still alive.
GRACE_SECONDS = 600.0
_SCRATCH_PREFIX = ".partial-"


def _experiment_of(path: str) -> Optional[int]:
    try:
        with open(os.path.join(path, "metadata.json"), encoding="utf-8") as f:
            return int(json.load(f).get("experiment_id"))
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def clean_checkpoint_root(root: str, registered: Iterable[str], experiment_ids: Set[int],
                          grace: float = GRACE_SECONDS, now: Optional[float] = None) -> List[str]:
    """Remove from the shared_fs checkpoint directory ``root``: scratch directories, and
    complete checkpoints that no record in ``registered`` names but whose metadata.json
    names one of ``experiment_ids`` (this master's), both older than ``grace`` seconds.

    Returns:
        The paths removed.
    """
    now = time.time() if now is None else now
    known = set(registered)
    removed: List[str] = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(root, name)
        try:
            if now - os.lstat(path).st_mtime < grace or not os.path.isdir(path):
                continue
        except OSError:
            continue
        if name.startswith(_SCRATCH_PREFIX):
            doomed = True
        else:
            try:
                check_checkpoint_id(name)
            except EngineError:
                continue  # not a checkpoint (e.g. tensorboard/)
            doomed = name not in known and _experiment_of(path) in experiment_ids
        if doomed:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
            logger.info("removed an unfinished checkpoint write: %s", path)
    return removed


def clean_checkpoint_roots(store: Any, default_storage: Dict[str, Any],
                           grace: float = GRACE_SECONDS) -> None:
    """:func:`clean_checkpoint_root` for every shared_fs root a master's experiments
    (or its ``default_storage``) use, with the master's ``store`` naming what counts."""
    exps = store.list_experiments(include_archived=True)
    roots = set()
    for storage in [default_storage] + [e.config.get("checkpoint_storage") or {} for e in exps]:
        if storage.get("type", "shared_fs") == "shared_fs" and storage.get("host_path"):
            roots.add(os.path.normpath(os.path.join(storage["host_path"],
                                                    storage.get("storage_path") or "")))
    registered = {c.uuid for c in store.list_checkpoints()}
    for root in sorted(roots):
        clean_checkpoint_root(root, registered, {e.id for e in exps}, grace=grace)
