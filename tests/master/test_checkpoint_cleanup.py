"""Unfinished checkpoint writes are removed at master start (clean_checkpoint_root)."""

import json
import os
import time
import uuid

from determined.master.experiments._cleanup import clean_checkpoint_root


def _dir(root, name, experiment_id=None, age=0.0):
    path = root / name
    path.mkdir()
    (path / "state_dict.pth").write_bytes(b"x")
    if experiment_id is not None:
        (path / "metadata.json").write_text(json.dumps({"experiment_id": experiment_id}))
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_partial_and_unregistered_checkpoints_are_removed(tmp_path):
    registered = str(uuid.uuid4())
    keep = _dir(tmp_path, registered, 1, age=3600)
    partial = _dir(tmp_path, f".partial-{uuid.uuid4()}-abc", age=3600)
    fresh_partial = _dir(tmp_path, f".partial-{uuid.uuid4()}-def", age=0)
    orphan = _dir(tmp_path, str(uuid.uuid4()), 1, age=3600)
    foreign = _dir(tmp_path, str(uuid.uuid4()), 99, age=3600)  # another master's
    other = _dir(tmp_path, "tensorboard", age=3600)
    removed = clean_checkpoint_root(str(tmp_path), [registered], {1, 2}, grace=600)
    assert sorted(removed) == sorted([str(partial), str(orphan)])
    for kept in (keep, fresh_partial, foreign, other):
        assert kept.exists()
    assert not partial.exists() and not orphan.exists()
