"""Leftovers of checkpoint writes that never finished, removed at master start.

A trial killed while writing a checkpoint leaves a ``.partial-*`` scratch directory
(shared_fs writes there, then renames); one killed between the rename and its report
leaves a complete checkpoint no record names. Both are removed once they are older
than a grace period, since a trial on a remote agent may still be writing, and only
when they are this master's own: another master sharing the storage numbers its
experiments from 1 too, so both kinds follow the trials' rule of owners
(:func:`determined.storage.owns_scratch`, :func:`determined.storage.owns_checkpoint`:
another owner's, and those written before owners were recorded, are kept).

Checkpoint GC marks records DELETED before it deletes their files (a crash never leaves
a record without files): :func:`finish_deletions` deletes what a master killed in
between left behind, in any storage type.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from typing import Any, Dict, Iterable, List, Optional, Set

from determined.engine import EngineError, check_checkpoint_id
from determined.storage import build_storage, owns_checkpoint, owns_scratch
from determined.storage._owners import SCRATCH_PREFIX

__all__ = ["clean_checkpoint_root", "clean_checkpoint_roots", "finish_deletions",
           "GRACE_SECONDS"]

logger = logging.getLogger("determined.master")

#: Entries younger than this may belong to a writer that is still alive.
GRACE_SECONDS = 600.0


def _metadata(path: str) -> Dict[str, Any]:
    try:
        with open(os.path.join(path, "metadata.json"), encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _experiment_of(meta: Dict[str, Any]) -> Optional[int]:
    try:
        return int(meta.get("experiment_id"))  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return None


def clean_checkpoint_root(root: str, registered: Iterable[str], experiment_ids: Set[int],
                          owner: str, grace: float = GRACE_SECONDS,
                          now: Optional[float] = None) -> List[str]:
    """Remove from the shared_fs checkpoint directory ``root`` what ``owner`` (this
    master's cluster id) owns and is older than ``grace`` seconds: scratch directories,
    and complete checkpoints that no record in ``registered`` names but whose
    metadata.json names one of ``experiment_ids`` (this master's).

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
        if name.startswith(SCRATCH_PREFIX):
            doomed = owns_scratch(owner, name)
        else:
            try:
                check_checkpoint_id(name)
            except EngineError:
                continue  # not a checkpoint (e.g. tensorboard/)
            meta = _metadata(path) if name not in known else {}
            doomed = _experiment_of(meta) in experiment_ids and owns_checkpoint(owner, meta)
        if doomed:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
            logger.info("removed an unfinished checkpoint write: %s", path)
    return removed


def clean_checkpoint_roots(store: Any, default_storage: Dict[str, Any], owner: str,
                           grace: float = GRACE_SECONDS) -> None:
    """:func:`clean_checkpoint_root` for every shared_fs root a master's experiments
    (or its ``default_storage``) use, with the master's ``store`` naming what counts
    and ``owner`` (its cluster id) whose leftovers are its own."""
    exps = store.list_experiments(include_archived=True)
    roots = set()
    for storage in [default_storage] + [e.config.get("checkpoint_storage") or {} for e in exps]:
        if storage.get("type", "shared_fs") == "shared_fs" and storage.get("host_path"):
            roots.add(os.path.normpath(os.path.join(storage["host_path"],
                                                    storage.get("storage_path") or "")))
    registered = {c.uuid for c in store.list_checkpoints()}
    for root in sorted(roots):
        clean_checkpoint_root(root, registered, {e.id for e in exps}, owner, grace=grace)


def finish_deletions(store: Any) -> List[str]:
    """Delete the files of every DELETED checkpoint that are still in storage: GC marks a
    record DELETED before it deletes the files, so a master killed in between left them.

    Returns:
        The uuids whose files were deleted (or found gone) now.
    """
    done: List[str] = []
    by_experiment: Dict[int, List[str]] = {}
    for c in store.list_checkpoints(states=["DELETED"]):  # one query, not one per experiment
        by_experiment.setdefault(c.experiment_id, []).append(c.uuid)
    if not by_experiment:
        return done
    for exp in store.list_experiments(include_archived=True):
        doomed = by_experiment.get(exp.id)
        if not doomed:
            continue
        try:
            storage = build_storage(exp.config.get("checkpoint_storage") or {})
            for uuid in doomed:
                storage.delete(uuid)  # a no-op where the files are gone
                done.append(uuid)
        except Exception as e:  # noqa: BLE001 - e.g. no credentials here: leave the rest
            logger.warning("experiment %s: could not delete the files of a deleted "
                           "checkpoint: %s", exp.id, e)
    return done
