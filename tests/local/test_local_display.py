"""What a local run prints fits the terminal: the summary table keeps the varying
hyperparameters that fit (and says how many it left out), event lines carry the time
of day and no source location."""

import io

from rich.console import Console

from determined.common.console import TrimmedConsole
from determined.local._display import ProgressDisplay, print_summary
from determined.local import ExperimentResult

HPARAMS = {"global_batch_size": 32, "learning_rate": 0.05, "momentum": 0.9,
           "dropout": 0.1, "hidden_size": 64, "weight_decay": 1e-4, "optimizer": "sgd"}


def _result(n_trials):
    trials = []
    for i in range(n_trials):
        hp = {k: (v * (i + 1) if isinstance(v, (int, float)) else f"{v}{i}")
              for k, v in HPARAMS.items()}
        trials.append({"trial_id": i + 1, "request_id": i, "hparams": hp, "seed": i,
                       "state": "COMPLETED", "batches": 375, "best_metric": 0.02 * (i + 1),
                       "restarts": 0, "latest_validation": None})
    return ExperimentResult(1, "COMPLETED", trials, trials[0], "abc", "/ckpt/abc", "/records")


def _render(result, width):
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None)
    print_summary(console, result, "validation_error")
    return out.getvalue()


def test_summary_fits_80_columns_and_names_what_it_left_out():
    text = _render(_result(4), 80)
    lines = text.splitlines()
    assert max(len(l) for l in lines) <= 80, text
    table = [l for l in lines if l.startswith(("┃", "│"))]
    assert table[0].rstrip().endswith("┃"), text  # the table is whole, not cut off
    assert "more varying hyperparameters not shown" in text and "det e describe --local 1" in text


def test_summary_shows_every_varying_hyperparameter_when_wide():
    text = _render(_result(4), 200)
    header = next(l for l in text.splitlines() if l.startswith("┃"))
    for name in ("batch", "learning_rate", "momentum", "dropout", "hidden_size", "weight_decay",
                 "optimizer"):
        assert name in header, header
    assert "not shown" not in text


def test_one_trial_has_no_hyperparameter_columns():
    text = _render(_result(1), 80)
    header = next(l for l in text.splitlines() if l.startswith("┃"))
    assert "learning_rate" not in header and "validation_error" in header
    assert "not shown" not in text


def test_event_lines_have_the_time_and_no_source_location():
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None)
    trial = _result(1).trials[0]
    with ProgressDisplay(console, "validation_error", lambda: 0.5) as display:
        display.event("validation", trial, {"validation_error": 0.05})
    text = out.getvalue()
    line = next(l for l in text.splitlines() if "validated at 375 batches" in l)
    assert "_display.py" not in text and line[2] == ":" and line[5] == ":", line
    assert "validation_error=0.05" in line


def test_best_trial_line_uses_short_numbers():
    result = _result(2)
    result.trials[0]["hparams"]["learning_rate"] = 0.26139934284277677
    text = _render(result, 80)
    line = text[text.index("Best trial"):]
    assert "learning_rate=0.2614" in line and "0.26139934" not in line, line


def test_restart_lines_say_where_the_trial_restarts_from():
    """A trial that failed before any checkpoint restarts from the beginning (the line
    said "from its latest checkpoint" either way)."""
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    view = {"trial_id": 2, "hparams": {}, "batches": 0, "best_metric": None, "restarts": 1,
            "latest_checkpoint": None, "checkpoint_batches": 0}
    with ProgressDisplay(console, "validation_error", lambda: 0.0) as display:
        display.event("restart", view, {"error": "ValueError: boom"})
        display.event("restart", dict(view, restarts=2, latest_checkpoint="c-1",
                                      checkpoint_batches=20), {"error": "ValueError: boom"})
    lines = [l for l in out.getvalue().splitlines() if "restart" in l]
    assert lines[0].endswith("trial 2: restart 1, from the beginning"), lines
    assert lines[1].endswith("restart 2, from checkpoint c-1 at 20 batches"), lines


def test_a_failure_is_printed_whole_once_then_named():
    """The same failure again (addresses aside) is "failed again, the same way" (each
    restart printed the whole traceback); another trial's is "the same way as trial
    N"; a different one is printed whole; the traceback's lines are not folded."""
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None)
    error = ('/m/model_def.py: T.train_batch raised ValueError: boom <x at 0x7f01>\n'
             'Traceback (most recent call last):\n'
             '  File "/a/long/path/to/the/model/directory/of/a/user/who/likes/long/names/'
             'model_def.py", line 4, in f\n'
             'ValueError: boom <x at 0x7f01>')
    view = {"trial_id": 2, "hparams": {}, "batches": 0, "best_metric": None, "restarts": 1,
            "latest_checkpoint": None, "checkpoint_batches": 0}
    with ProgressDisplay(console, "validation_error", lambda: 0.0) as display:
        display.event("restart", view, {"error": error})
        display.event("restart", dict(view, restarts=2),
                      {"error": error.replace("0x7f01", "0x7e99")})
        display.event("error", dict(view, restarts=2), {"error": error})
        display.event("error", dict(view, trial_id=3), {"error": error})
        display.event("error", dict(view, trial_id=4), {"error": "ValueError: other"})
    text = out.getvalue()
    lines = text.splitlines()
    assert text.count("Traceback") == 1, text
    assert '  File "/a/long/path/to/the/model/directory/of/a/user/who/likes/long/names/' \
        'model_def.py", line 4, in f' in lines, text
    assert any(l.endswith("trial 2 failed again, the same way; restart 2, from the beginning")
               for l in lines), text
    assert any(l.endswith("trial 2 failed again, the same way; no restarts left")
               for l in lines), text
    assert any(l.endswith("trial 3 failed the same way as trial 2; no restarts left")
               for l in lines), text
    assert lines[lines.index(next(l for l in lines if l.endswith("trial 4 failed:"))) + 1] \
        == "ValueError: other", text


def test_progress_line_fits_the_terminal_with_its_bar():
    """A long status shortens (after a narrower bar); the bar stays; the status was cut
    into the bar's room before, and the bar and percentage read "s…  …"."""
    for width in (50, 80, 120):
        out = io.StringIO()
        console = TrimmedConsole(file=out, width=width, color_system=None)
        counts = {"running": 12, "done": 100, "errors": 3}
        with ProgressDisplay(console, "validation_categorical_accuracy_top5", lambda: 0.5,
                             counts_fn=lambda: counts, best=0.123456):
            pass
        (line,) = out.getvalue().splitlines()
        assert len(line) <= width and line.startswith("search ━━━━"), line
        assert "50.0%" in line, line
        assert "12 running" in line and line == line.rstrip(), line


def test_trimmed_console_leaves_no_trailing_spaces():
    out = io.StringIO()
    console = TrimmedConsole(file=out, width=30, color_system="truecolor", force_terminal=True)
    console.print("[red]Best checkpoint:[/red] /a/long/path/that/does/not/fit/here")
    print_summary(console, _result(1), "validation_error")
    lines = out.getvalue().splitlines()
    assert [l for l in lines if l != l.rstrip()] == [], lines
    assert "\x1b[31mBest checkpoint:\x1b[0m" in lines[0], lines


def test_summary_paths_are_never_broken_over_two_lines():
    """A path that does not fit beside its label gets a line of its own, whole (folded
    at 80 columns it could not be copied); one that fits stays beside it."""
    long_dir = "/tmp/" + "a-directory-name-long-enough-to-need-a-line" * 2
    result = _result(1)
    result.best_checkpoint_path = f"{long_dir}/checkpoints/05f48366-b3f3-40c5-bd4e-e43666db09bf"
    lines = _render(result, 80).splitlines()
    at = lines.index("Best checkpoint:")
    assert lines[at + 1] == result.best_checkpoint_path, lines
    assert "Records: /records" in lines, lines


def test_event_lines_and_summary_say_1_batch_and_1_restart():
    """One batch (or restart) reads "1 batch" ("1 batches" before)."""
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    view = {"trial_id": 3, "hparams": {}, "batches": 1, "best_metric": None, "restarts": 1,
            "latest_checkpoint": "c-1", "checkpoint_batches": 1}
    with ProgressDisplay(console, "validation_error", lambda: 0.0) as display:
        display.event("started", view, {"resumed": True})
        display.event("validation", view, {"validation_error": 0.5})
        display.event("restart", view, {"error": "ValueError: boom"})
    text = out.getvalue()
    assert "trial 3 resumed from checkpoint c-1 at 1 batch\n" in text, text
    assert "trial 3 validated at 1 batch: validation_error=0.5" in text, text
    assert "from checkpoint c-1 at 1 batch\n" in text and "batches" not in text, text
    result = _result(1)
    result.trials[0]["restarts"] = 1
    assert "COMPLETED (1 restart)" in _render(result, 120)


def test_progress_line_at_80_columns_keeps_the_best_value_whole():
    """The quick start's search at COLUMNS=80 ended "best validation_error 0.…": the
    metric's name shortens, the value stays."""
    out = io.StringIO()
    console = TrimmedConsole(file=out, width=80, color_system=None)
    with ProgressDisplay(console, "validation_error", lambda: 1.0,
                         counts_fn=lambda: {"running": 0, "done": 16, "errors": 0},
                         best=0.01974):
        pass
    (line,) = out.getvalue().splitlines()
    assert len(line) <= 80 and line.endswith(" 0.01974"), line
    assert "0 running, 16 done | best validatio" in line, line
