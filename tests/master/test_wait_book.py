"""The master's WaitBook: it keeps the last pass's reasons and logs a task once when it
becomes impossible to schedule, not at every pass."""

import logging
import threading

from determined.master._waits import WaitBook
from determined.master.scheduler import Agent, Task, waiting_reasons


def _pass(book, agents, pending):
    book.note(waiting_reasons(agents, pending, {}))


def test_logs_once_per_task_while_it_stays_impossible(caplog):
    book = WaitBook(threading.Lock())
    big = Task("trial-7", "exp-3", 4, arrival=0)
    caplog.set_level(logging.WARNING, logger="determined.master")
    for _ in range(5):
        _pass(book, [Agent("a", 2)], [big])
    _pass(book, [], [big])  # another reason, still impossible: no new line
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["trial 7 cannot be scheduled: The trial needs 4 slots on the agents it "
                     "may use together; at most 2 usable slot(s) are there. It waits until "
                     "agents with more slots join."]
    assert book.of("trial-7").reason == "no agent connected"


def test_logs_again_when_it_became_possible_and_then_impossible_again(caplog):
    book = WaitBook(threading.Lock())
    task = Task("task-ab12", "task-ab12", 2, arrival=0, preemptible=False)
    caplog.set_level(logging.WARNING, logger="determined.master")
    _pass(book, [Agent("a", 1)], [task])
    _pass(book, [Agent("a", 1), Agent("b", 2)], [task])  # it could start now
    _pass(book, [Agent("a", 1)], [task])
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "task ab12 cannot be scheduled", "task ab12 cannot be scheduled"]

