"""Unfinished checkpoint writes are removed at master start (clean_checkpoint_root): only
this master's own (its owner's), never another master's that shares the storage."""

import json
import os
import time
import uuid

from determined.master.experiments._cleanup import clean_checkpoint_root
from determined.storage import scratch_tag

MINE = str(uuid.uuid4())
OTHER = str(uuid.uuid4())


def _dir(root, name, experiment_id=None, age=0.0, owner=None):
    path = root / name
    path.mkdir()
    (path / "state_dict.pth").write_bytes(b"x")
    if experiment_id is not None:
        (path / "metadata.json").write_text(json.dumps(
            {"experiment_id": experiment_id, **({"owner": owner} if owner else {})}))
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def _partial(owner, experiment_id=1, trial_id=1):
    return f".partial-{scratch_tag(experiment_id, trial_id, owner)}{uuid.uuid4()}-0badf00d"


def test_own_partial_and_unregistered_checkpoints_are_removed(tmp_path):
    registered = str(uuid.uuid4())
    keep = _dir(tmp_path, registered, 1, age=3600, owner=MINE)
    partial = _dir(tmp_path, _partial(MINE), age=3600)
    fresh_partial = _dir(tmp_path, _partial(MINE), age=0)
    orphan = _dir(tmp_path, str(uuid.uuid4()), 1, age=3600, owner=MINE)
    foreign = _dir(tmp_path, str(uuid.uuid4()), 99, age=3600, owner=MINE)  # no such exp
    other = _dir(tmp_path, "tensorboard", age=3600)
    removed = clean_checkpoint_root(str(tmp_path), [registered], {1, 2}, MINE, grace=600)
    assert sorted(removed) == sorted([str(partial), str(orphan)])
    for kept in (keep, fresh_partial, foreign, other):
        assert kept.exists()
    assert not partial.exists() and not orphan.exists()


def test_another_owners_and_owner_less_leftovers_are_kept(tmp_path):
    """Another master's experiment 1 is not this one's: its old scratch directories and
    its checkpoints (which this master has no record of) stay, as do those written
    before owners were recorded; even with no grace at all."""
    kept = [
        _dir(tmp_path, _partial(OTHER), age=3600),
        _dir(tmp_path, _partial(""), age=3600),
        _dir(tmp_path, f".partial-{uuid.uuid4()}-0badf00d", age=3600),
        _dir(tmp_path, str(uuid.uuid4()), 1, age=3600, owner=OTHER),
        _dir(tmp_path, str(uuid.uuid4()), 1, age=3600),
    ]
    mine = _dir(tmp_path, _partial(MINE, 7, 9), age=3600)
    removed = clean_checkpoint_root(str(tmp_path), [], {1}, MINE, grace=0)
    assert removed == [str(mine)]
    assert all(path.exists() for path in kept)
