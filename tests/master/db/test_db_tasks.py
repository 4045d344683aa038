"""Tasks' log lines: paged as trial logs are (one reader, ``db/_logs.py``), on every backend."""

import pytest

from determined.master.db import NotFoundError, Store


def test_task_logs_page_like_trial_logs(store: Store) -> None:
    store.create_task("t1", "command", "determined", {"entrypoint": "true"}, None)
    store.create_task("t2", "command", "determined", {"entrypoint": "true"}, None)
    assert store.get_task_logs("t1") == []
    assert store.add_task_logs("t1", [f"line {i}" for i in range(10)]) == 10
    assert store.add_task_logs("t2", ["other task"]) == 1
    logs = store.get_task_logs("t1")
    assert [x.line for x in logs] == [f"line {i}" for i in range(10)]
    assert logs[0].timestamp.tzinfo is not None
    assert [x.line for x in store.get_task_logs("t1", limit=2)] == ["line 0", "line 1"]
    assert [x.line for x in store.get_task_logs("t1", tail=2)] == ["line 8", "line 9"]
    assert [x.line for x in store.get_task_logs("t1", after_id=logs[7].id)] == ["line 8",
                                                                               "line 9"]
    assert [x.line for x in store.get_task_logs("t2")] == ["other task"]
    with pytest.raises(ValueError, match="tail"):
        store.get_task_logs("t1", tail=-1)


def test_task_logs_bad_input_names_what_is_wrong(store: Store) -> None:
    store.create_task("t1", "command", "determined", {"entrypoint": "true"}, None)
    with pytest.raises(NotFoundError, match="task 'nope'"):
        store.add_task_logs("nope", ["a line"])
    with pytest.raises(ValueError, match=r"lines\[1\]"):
        store.add_task_logs("t1", ["fine", 7])
    with pytest.raises(ValueError, match="list of str"):
        store.add_task_logs("t1", "not a list")
    assert store.add_task_logs("t1", []) == 0
    assert store.get_task_logs("t1") == []
