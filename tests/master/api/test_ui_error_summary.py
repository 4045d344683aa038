"""``error_summary``: the one line of a trial's stored error the experiment page's trial
rows carry (the whole error, up to 2,000 characters, is the trial page's)."""

from determined.engine import trial_error
from determined.master.api._ui_queries import ERROR_SUMMARY_CHARS, error_summary


def test_a_traceback_reads_as_its_exception():
    _, error = trial_error("exit code 1", "Traceback (most recent call last):\n"
                                          '  File "a.py", line 3, in <module>\n'
                                          "ValueError: no rows in train.csv")
    assert error_summary(error) == "Trial failed (exit code 1): ValueError: no rows in train.csv"


def test_it_is_the_line_the_log_says_and_never_longer_than_the_cap():
    for message in ("its last output:\nloading\nno GPU found", "trial 3 failed: loader broke",
                    "", "its rank 1 failed first:\nTraceback (most recent call last):\n"
                        "KeyError: 'x'"):
        line, error = trial_error("exit code 2", message)
        assert error_summary(error) == line, message
    _, long = trial_error("exit code 1", "its last output:\n" + "x" * 5000)
    summary = error_summary(long)
    assert len(summary) == ERROR_SUMMARY_CHARS and summary.endswith("…"), summary
    assert summary.startswith("Trial failed (exit code 1): xxx")


def test_no_error_no_summary():
    assert error_summary(None) is None and error_summary("") is None
