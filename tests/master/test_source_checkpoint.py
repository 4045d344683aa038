"""One resolver for the checkpoint a search warm-starts from (local runs and the master):
it is found with the storage of the experiment that wrote it, must be COMPLETED, and a
bad reference is an error naming the config field."""

from __future__ import annotations

import os
import uuid as uuidlib
from typing import Any, Dict

import pytest

from determined.errors import InvalidConfigError
from determined.local._run import _resolve_source
from determined.master.db import SourceCheckpointError, Store, resolve_source_checkpoint
from determined.storage import build_storage

UUID = str(uuidlib.UUID(int=7))


def _config(root: str, **searcher: Any) -> Dict[str, Any]:
    return {"searcher": dict(searcher, name="single"),
            "checkpoint_storage": {"type": "shared_fs", "host_path": root}}


@pytest.fixture
def store(tmp_path: Any) -> Any:
    s = Store("sqlite:///" + str(tmp_path / "db.sqlite"))
    s.upgrade()
    source = _config(str(tmp_path / "source-storage"))
    exp = s.create_experiment(source, b"", owner="determined")
    trial = s.create_trial(exp, "1", {}, 1)
    s.add_checkpoint(UUID, trial, 4, {}, {}, "torch", "pickle")
    s.trial_id = trial  # type: ignore[attr-defined]
    yield s
    s.close()


def test_found_in_the_source_experiments_storage(store: Any, tmp_path: Any) -> None:
    mine = _config(str(tmp_path / "my-storage"), source_checkpoint_uuid=UUID)
    uuid, path = resolve_source_checkpoint(mine, store, build_storage)
    assert uuid == UUID
    assert path == os.path.join(str(tmp_path / "source-storage"), UUID)
    by_trial = _config(str(tmp_path / "my-storage"), source_trial_id=store.trial_id)
    assert resolve_source_checkpoint(by_trial, store, build_storage) == (uuid, path)
    assert resolve_source_checkpoint(_config("x"), store, build_storage) is None


def test_bad_references_name_the_field(store: Any, tmp_path: Any) -> None:
    cases = [({"source_checkpoint_uuid": str(uuidlib.UUID(int=8))},
              "searcher.source_checkpoint_uuid", "no checkpoint"),
             ({"source_trial_id": 999}, "searcher.source_trial_id", "has no checkpoint")]
    for searcher, field, words in cases:
        with pytest.raises(SourceCheckpointError, match=words) as err:
            resolve_source_checkpoint(_config("x", **searcher), store, build_storage)
        assert err.value.field == field and str(err.value).startswith(field)
        with pytest.raises(InvalidConfigError, match=field.split(".")[1]):
            _resolve_source(_config("x", **searcher), store)  # the local form of the error
    store.set_checkpoint_state(UUID, "DELETED")
    with pytest.raises(SourceCheckpointError, match="is DELETED, expected COMPLETED"):
        resolve_source_checkpoint(_config("x", source_checkpoint_uuid=UUID), store,
                                  build_storage)
