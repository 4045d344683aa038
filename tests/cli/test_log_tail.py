"""The follow loop over pages of a stored log (``common/api/_log_tail.py``), fed by an
in-memory log that answers as the master's ``GET .../logs?after_id=&limit=`` does."""

from typing import Any, Dict, List, Optional

from determined.common.api._log_tail import PAGE, LogTail, follow_experiment, follow_log


class StoredLog:
    """Lines ``1..n``; a page says ``complete`` as given (None: leaves it out). With
    ``last_after``: one more line is stored right after that many reads, and the log is
    complete from then on (the master's end line, stored just after the end state)."""

    def __init__(self, n: int, complete: Optional[bool], last_after: int = 0):
        self.lines = [{"id": i, "line": f"line {i}"} for i in range(1, n + 1)]
        self.complete = complete
        self.last_after = last_after
        self.reads: List[int] = []  # after_id of each read

    def read(self, after: int) -> Dict[str, Any]:
        self.reads.append(after)
        page: Dict[str, Any] = {"logs": [l for l in self.lines if l["id"] > after][:PAGE]}
        if self.complete is not None:
            page["complete"] = self.complete
        if len(self.reads) == self.last_after:
            self.lines.append({"id": len(self.lines) + 1, "line": "Trial completed"})
            self.complete = True
        return page


def _never_asked() -> bool:
    raise AssertionError("the state was read although the log said it is complete")


def test_a_complete_log_is_read_to_its_last_page_once_and_not_asked_for_the_state():
    log = StoredLog(2 * PAGE + 5, complete=True)
    printed: List[int] = []
    tail = LogTail(log.read, lambda line: printed.append(line["id"]))
    follow_log(tail, _never_asked)
    assert printed == list(range(1, 2 * PAGE + 6))
    assert log.reads == [0, PAGE, 2 * PAGE]  # three pages, no read after the short one


def test_newest_lines_of_a_complete_log_end_the_follow_without_a_read():
    log = StoredLog(3, complete=True)
    tail = LogTail(log.read, lambda line: None)
    tail.take(log.lines[-1:], complete=True)  # as `logs -f --tail 1` of an ended task
    follow_log(tail, _never_asked)
    assert log.reads == []


def test_an_incomplete_log_after_the_end_is_read_until_it_is_complete():
    log = StoredLog(1, complete=False, last_after=2)
    printed: List[int] = []
    tail = LogTail(log.read, lambda line: printed.append(line["id"]))
    follow_log(tail, lambda: True, interval=0)  # the end is seen at once
    assert printed == [1, 2] and len(log.reads) == 3  # none after the complete page


def test_tail_zero_follows_only_the_lines_that_come_later():
    """``logs -f --tail 0``: the newest stored line is read (tail=1) to know where the
    log is, none printed; then only the line stored later is."""
    log = StoredLog(5, complete=False, last_after=1)
    printed: List[int] = []
    tail = LogTail(log.read, lambda line: printed.append(line["id"]))
    tail.take_newest(log.lines[-1:], 0, complete=False)
    follow_log(tail, lambda: False, interval=0)
    assert printed == [6] and log.reads[0] == 5


def test_tail_n_prints_the_last_n_of_the_newest_page():
    log = StoredLog(5, complete=True)
    printed: List[int] = []
    tail = LogTail(log.read, lambda line: printed.append(line["id"]))
    tail.take_newest(log.lines[-3:], 3, complete=True)
    follow_log(tail, _never_asked)
    assert printed == [3, 4, 5] and log.reads == []


def test_follow_experiment_follows_the_lowest_trial_id_to_its_end():
    """Trials listed highest id first; the first trial's log grows by more than a page
    between two reads of the experiment: every line of trial 3 once, in order."""
    logs = {3: StoredLog(0, complete=False), 5: StoredLog(4, complete=True)}
    states = iter(["ACTIVE", "ACTIVE", "COMPLETED"])
    updates: List[str] = []

    def experiment() -> Dict[str, Any]:
        log = logs[3]
        log.lines += [{"id": i, "line": f"line {i}"}
                      for i in range(len(log.lines) + 1, len(log.lines) + PAGE + 300)]
        state = next(states)
        log.complete = state == "COMPLETED"
        return {"state": state, "trials": [{"id": 5}, {"id": 3}]}

    printed: List[int] = []
    exp = follow_experiment(experiment, lambda trial, after: logs[trial].read(after),
                            lambda line: printed.append(line["id"]),
                            on_update=lambda e: updates.append(e["state"]), interval=0)
    assert exp["state"] == "COMPLETED" and updates == ["ACTIVE", "ACTIVE", "COMPLETED"]
    assert printed == list(range(1, 3 * (PAGE + 299) + 1))
    assert logs[5].reads == []
