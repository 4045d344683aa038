"""The live experiment progress display and the plain table/CSV output of ``det``."""

import csv
import io
import re

from rich.console import Console

from determined.cli._progress import ExperimentProgress, summarize
from determined.cli._remote import csv_text, table_text


def experiment(state, progress, trials):
    return {"id": 4, "state": state, "progress": progress,
            "config": {"searcher": {"metric": "validation_loss", "smaller_is_better": True}},
            "trials": [{"id": i + 1, "state": s, "total_batches": b, "best_validation": v}
                       for i, (s, b, v) in enumerate(trials)]}


RUNNING = experiment("ACTIVE", 0.25, [("ACTIVE", 30, 0.5), ("COMPLETED", 40, 0.25),
                                      ("ERROR", 0, None)])


def test_summary_counts_trials_batches_and_best_metric():
    assert summarize(RUNNING) == ("trials: 1 running, 1 completed, 1 failed | batches: 70 | "
                                  "best validation_loss: 0.25")
    larger = experiment("ACTIVE", 0, [("ACTIVE", 5, 0.5), ("ACTIVE", 5, 0.7)])
    larger["config"]["searcher"]["smaller_is_better"] = False
    assert summarize(larger).endswith("best validation_loss: 0.7")
    assert "best" not in summarize(experiment("ACTIVE", 0, []))


def test_a_scripts_steps_are_counted_in_its_searchers_unit():
    exp = experiment("ACTIVE", 0.5, [("ACTIVE", 1, 0.5), ("COMPLETED", 3, 0.25)])
    exp["config"].update(entrypoint="python3 train.py")
    exp["config"]["searcher"]["max_length"] = {"epochs": 3}
    assert summarize(exp) == ("trials: 1 running, 1 completed | epochs: 4 | "
                              "best validation_loss: 0.25")
    assert summarize(exp, 45) == "1 run 1 done | 4 ep | validation_loss 0.25"  # narrow
    out = io.StringIO()
    with ExperimentProgress(4, Console(file=out, force_terminal=False)) as progress:
        progress.update(exp)
    assert "| epochs: 4 |" in out.getvalue() and "batch" not in out.getvalue()
    exp["config"]["searcher"]["max_length"] = {"records": 64}
    assert "| records: 4 |" in summarize(exp)
    del exp["config"]["searcher"]["max_length"]  # runs until it exits: its own steps
    assert "| steps: 4 |" in summarize(exp)
    exp["config"]["entrypoint"] = "model_def:Trial"  # a Trial class: batches
    assert "| batches: 4 |" in summarize(exp)


def test_plain_lines_when_not_a_terminal():
    out = io.StringIO()
    with ExperimentProgress(4, Console(file=out, force_terminal=False)) as progress:
        progress.update(RUNNING)
        progress.update(RUNNING)  # unchanged: no second line
        progress.update(experiment("COMPLETED", 1.0, [("COMPLETED", 40, 0.25)]))
    assert out.getvalue().splitlines() == [
        "Experiment 4: ACTIVE 25% | trials: 1 running, 1 completed, 1 failed | batches: 70 | "
        "best validation_loss: 0.25",
        "Experiment 4: COMPLETED 100% | trials: 0 running, 1 completed | batches: 40 | "
        "best validation_loss: 0.25",
    ]


def test_live_bar_on_a_terminal():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=160)
    with ExperimentProgress(4, console) as progress:
        assert progress.live
        progress.update(RUNNING)
    text = out.getvalue()
    assert "\x1b[" in text  # drawn with terminal control codes
    assert "Experiment 4" in text and "ACTIVE" in text and "25%" in text
    assert "1 running, 1 completed" in text
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    assert "Experiment 4  " not in plain, plain  # no frame before the state is known


def test_plain_table_and_csv_keep_every_value():
    rows = [{"id": 1, "hparams": {"lr": 0.1}, "loss": 0.123456789, "note": None},
            {"id": 22, "hparams": {"lr": 0.01}, "loss": 2.0, "note": "a, b"}]
    lines = table_text(rows, ["id", "hparams", "loss", "note"]).splitlines()
    assert [c.strip() for c in lines[0].split(" | ")] == ["id", "hyperparameters", "loss",
                                                          "note"]
    assert set(lines[1]) == {"-", "+"}
    assert lines[2].split(" | ") == ["1 ", "lr=0.1         ", "0.123457 |"]  # compact
    assert lines[3].split(" | ") == ["22", "lr=0.01        ", "2       ", "a, b"]
    parsed = list(csv.DictReader(io.StringIO(csv_text(rows, ["id", "loss", "note"]))))
    assert parsed == [{"id": "1", "loss": "0.123456789", "note": ""},
                      {"id": "22", "loss": "2.0", "note": "a, b"}]


def test_a_failed_or_canceled_experiment_never_reads_100_percent():
    from determined.cli._progress import progress_text

    out = io.StringIO()
    with ExperimentProgress(4, Console(file=out, force_terminal=False)) as progress:
        # ASHA counts errored trials as closed: the stored progress of a failed search is 1.0.
        progress.update(experiment("ERROR", 1.0, [("ERROR", 0, None), ("ERROR", 0, None)]))
    assert out.getvalue().startswith("Experiment 4: ERROR | trials: 0 running, 0 completed, "
                                     "2 failed | "), out.getvalue()  # not "ERROR failed"
    assert "100%" not in out.getvalue()
    assert progress_text("CANCELED", 1.0) == "canceled"
    assert progress_text("COMPLETED", 1.0) == "100%" and progress_text("ACTIVE", 0.424) == "42%"


def test_follow_summary_counts_failed_trials_at_any_width():
    trials = [{"state": "ERROR", "best_validation": None, "total_batches": 3},
              {"state": "ACTIVE", "best_validation": 0.5, "total_batches": 40},
              {"state": "COMPLETED", "best_validation": 0.25, "total_batches": 100}]
    exp = {"id": 3, "state": "ACTIVE", "progress": 0.5, "trials": trials,
           "config": {"searcher": {"metric": "validation_loss", "smaller_is_better": True}}}
    assert "1 failed" in summarize(exp)  # was "1 error"
    for width in (20, 34, 50, 60):
        text = summarize(exp, width)
        assert "1 failed" in text and len(text) <= width, (width, text)
    no_metric = {**exp, "trials": [{"state": "ERROR", "total_batches": 3}]}
    for width in (12, 30):
        text = summarize(no_metric, width)
        assert "1 failed" in text and len(text) <= width, (width, text)
    ok = {**exp, "trials": trials[1:]}
    assert "failed" not in summarize(ok, 34)


def test_log_lines_under_a_live_bar_are_never_folded(monkeypatch):
    """On a terminal, a trial's log line longer than the terminal is printed whole
    (the terminal wraps it; a path in it stays one piece to copy)."""
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80, color_system=None)
    monkeypatch.setattr("sys.stdout", type("Tty", (io.StringIO,), {"isatty": lambda s: True})())
    line = "trial 2 failed: /tmp/det-workdirs/exp2-trial2-pid15157/model_def.py: " + "x" * 60
    with ExperimentProgress(4, console) as progress:
        progress.update(RUNNING)
        progress.log(line)
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert line in re.split(r"[\r\n]", shown), shown


def test_log_lines_go_to_a_redirected_stdout_under_a_live_bar(monkeypatch):
    """`det e create -f > log.txt` on a terminal: the bar stays on the terminal
    (stderr), the trial's log lines go to the file (rich sent them to the terminal)."""
    terminal, piped = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stdout", piped)
    console = Console(file=terminal, force_terminal=True, width=80, color_system=None)
    with ExperimentProgress(4, console) as progress:
        progress.update(RUNNING)
        progress.log("trial 1 exited: completed")
    assert piped.getvalue() == "trial 1 exited: completed\n"
    assert "exited" not in terminal.getvalue()
