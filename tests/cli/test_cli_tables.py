"""The table formatting of ``det`` (``cli/_table.py``): 80 columns, headers wrapped at
``._- `` boundaries, hyperparameters over several lines, id columns with one value
left out, the searcher metric's column named after it, the columns left out named as
their headers read."""

import io
import pathlib

import pytest
import yaml

from det_cli_testing import (hidden_names, run_det, run_det_in_terminal, table_headers,
                             table_rule)
from determined.cli._experiment_show import WORKLOAD_COLUMNS, metric_labels, step_labels
from determined.cli._table import (csv_text, label_lines, print_rows, table_text,
                                   varying_columns)
from determined.cli._trial import TRIAL_COLUMNS

UUID = "4f9a1c2e-1111-2222-3333-444455556666"


def workloads(n=3):
    """Rows of one trial's workloads as ``det trial describe --metrics`` makes them."""
    return [{"experiment_id": 7, "trial_id": 12, "batches": 100 * (i + 1),
             "end_time": f"2026-11-23T19:0{i}:25+00:00", "checkpoint_state": "COMPLETED",
             "checkpoint_uuid": UUID, "validation": 0.25 / (i + 1),
             "training.loss": 0.5 / (i + 1), "training.categorical_accuracy": 0.9,
             "validation.categorical_accuracy": 0.875, "validation.validation_loss": 0.25}
            for i in range(n)]


METRIC_COLUMNS = ["training.loss", "training.categorical_accuracy",
                  "validation.categorical_accuracy"]


def test_label_lines_break_after_dots_underscores_dashes_and_spaces():
    assert label_lines("validation.categorical_accuracy", 12) == [
        "validation.", "categorical_", "accuracy"]
    assert label_lines("validation.categorical_accuracy", 24) == [
        "validation.categorical_", "accuracy"]
    assert label_lines("best validation_loss", 11) == ["best", "validation_", "loss"]
    assert label_lines("max-slots", 9) == ["max-slots"]
    assert label_lines("ckpt state", 5) == ["ckpt", "state"]
    # Only a piece longer than the column is cut (there is no boundary to break at).
    assert label_lines("hyperparameters", 8) == ["hyperpar", "ameters"]
    assert label_lines("", 8) == [""]


def test_long_metric_headers_wrap_whole_words_and_lines_fit():
    rows = workloads()
    columns = ["batches", "validation", "training.categorical_accuracy",
               "validation.categorical_accuracy"]
    text = table_text(rows, columns, width=60, labels=metric_labels("validation_loss"))
    lines = text.splitlines()
    assert all(len(line) <= 60 for line in lines), text
    assert "(hidden" not in text, text  # they fit, wrapped
    header = lines[:table_rule(lines)]
    assert len(header) > 1, text  # wrapped, not cut
    assert "\u2026" not in "".join(header), text
    # Header pieces are whole: "validation." or "categorical_", never "validati".
    cells = [[c.strip() for c in line.split("|")] for line in header]
    for col, name in enumerate(["batches", "validation_loss", "training.categorical_accuracy",
                                "validation.categorical_accuracy"]):
        pieces = [row[col] for row in cells if col < len(row) and row[col]]
        assert "".join(pieces) == name, (pieces, text)
        assert all(p[-1] in "._-" for p in pieces[:-1]), (pieces, text)


def test_one_trials_workloads_at_80_columns_keep_the_uuid_and_metric():
    """The checkpoint's UUID (to copy) and the searcher metric stay whole; times and the
    checkpoint's state are left out first, then the rightmost metrics."""
    from determined.cli._experiment_show import WORKLOAD_DROP_FIRST

    columns = [c for c in WORKLOAD_COLUMNS if c != "experiment_id"] + METRIC_COLUMNS
    text = table_text(workloads(), columns, width=80, labels=metric_labels("validation_loss"),
                      drop_first=WORKLOAD_DROP_FIRST)
    assert all(len(line) <= 80 for line in text.splitlines()), text
    assert UUID in text and "0.0833333" in text, text
    assert table_headers(text.splitlines())[:4] == [
        "trial", "batches", "checkpoint", "validation_loss"], text
    # Named as the headers read (not end_time, checkpoint_state), each whole: the note
    # is folded at the width, not cut.
    assert hidden_names(text.splitlines()) == [
        "ended", "ckpt state", "training.categorical_accuracy",
        "validation.categorical_accuracy"], text
    assert "\u2026" not in text, text


def test_a_long_hidden_note_folds_at_the_width_with_every_name_whole():
    """The ``(hidden: ...)`` note was cut at 80 columns (``validation.categ…``): it
    folds as det's other long lines do, later lines indented, no word broken."""
    names = [f"validation.a_rather_long_metric_name_{i}" for i in range(12)]
    rows = [{"trial_id": 1, "batches": 100, **{n: 0.123456 for n in names}}]
    for width in (60, 80):
        text = table_text(rows, ["trial_id", "batches", *names], width=width)
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("(hidden:"))
        note = lines[start:]
        assert len(note) > 1 and all(len(line) <= width for line in lines), text
        assert all(line.startswith("  ") for line in note[1:]), text  # hung under it
        assert " ".join(line.strip() for line in note).endswith("; --csv/--json show all)"), text
        assert "\u2026" not in text, text
        shown = set(table_headers(lines[:start]))
        assert set(hidden_names(lines)) == {n for n in names if n not in shown}, text


def test_searcher_metric_column_is_named_after_the_metric():
    rows = workloads(2)
    text = table_text(rows, ["batches", "validation"], width=80,
                      labels=metric_labels("validation_loss"))
    assert text.splitlines()[0].split() == ["batches", "|", "validation_loss"], text
    trial = {"trial_id": 1, "state": "COMPLETED", "best_validation": 0.125}
    text = table_text([trial], ["trial_id", "state", "best_validation"], width=80,
                      labels=metric_labels("validation_loss"))
    assert "best validation_loss" in text.splitlines()[0], text
    assert metric_labels(None) == {}  # experiments with different metrics: generic headers


def test_hyperparameters_continue_on_following_lines_of_their_row():
    hparams = {"learning_rate": 0.000123456, "dropout": 0.25, "global_batch_size": 64,
               "n_filters1": 32, "n_filters2": 64, "optimizer": "adam", "layers": 4}
    rows = [{"trial_id": 12, "experiment_id": 3, "state": "COMPLETED", "hparams": hparams,
             "total_batches": 12000, "restarts": 0, "best_validation": 0.0123456789,
             "latest_checkpoint": UUID, "start_time": "2026-11-23T19:03:25+00:00",
             "end_time": None},
            {"trial_id": 13, "experiment_id": 3, "state": "ACTIVE", "hparams": {"lr": 0.1},
             "total_batches": 50, "restarts": 1, "best_validation": None,
             "latest_checkpoint": None, "start_time": "2026-11-23T19:04:25+00:00",
             "end_time": None}]
    text = table_text(rows, TRIAL_COLUMNS, width=80)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), text
    assert "\u2026" not in "".join(lines[:-1]), text  # nothing cut (but the hidden list)
    body = lines[2:]
    first = next(i for i, line in enumerate(body) if line.startswith("12 "))
    second = next(i for i, line in enumerate(body) if line.startswith("13 "))
    assert second - first > 1, text  # the first row took several lines
    # Continuation lines are blank in the other columns and carry the rest of the pairs.
    hp_col = lines[0].index("hyperparameters")
    joined = " ".join(line[hp_col:].split(" | ")[0].strip() for line in body[first:second])
    assert joined.split() == ["learning_rate=0.0001235", "dropout=0.25",
                              "global_batch_size=64", "n_filters1=32", "n_filters2=64",
                              "optimizer=adam", "layers=4"], text
    assert all(line[:hp_col].strip(" |") == "" for line in body[first + 1:second]), text


def test_varying_columns_leaves_out_ids_with_one_value():
    rows = workloads(3)
    columns = ["experiment_id", "trial_id", "batches", "validation"]
    assert varying_columns(rows, columns) == ["batches", "validation"]
    assert varying_columns(rows[:1], columns) == columns  # one row: it says which
    rows[1]["trial_id"] = 13
    assert varying_columns(rows, columns) == ["trial_id", "batches", "validation"]
    # Other columns stay, even with one value (every trial COMPLETED is worth seeing).
    assert "state" in varying_columns([{"state": "A"}, {"state": "A"}], ["state"])


class FakeTerminal(io.StringIO):
    """A text stream that says it is a terminal (print_rows leaves constant ids out)."""

    def isatty(self):
        return True


def test_print_rows_leaves_constant_ids_out_only_on_a_terminal(monkeypatch):
    import argparse

    monkeypatch.setenv("COLUMNS", "80")
    rows = workloads(2)
    columns = [c for c in WORKLOAD_COLUMNS]
    tty, pipe = FakeTerminal(), io.StringIO()
    print_rows(rows, columns, argparse.Namespace(), title="Workloads", out=tty,
               labels=metric_labels("validation_loss"))
    print_rows(rows, columns, argparse.Namespace(), title="Workloads", out=pipe)
    title, tty_header = tty.getvalue().splitlines()[:2]
    assert "trial" not in tty_header and "exp" not in tty_header, tty.getvalue()
    assert title == "Workloads (exp 7, trial 12)", tty.getvalue()  # the title says which
    assert "validation_loss" in tty.getvalue()
    assert pipe.getvalue().splitlines()[1].startswith("exp | trial"), pipe.getvalue()


def test_no_line_is_wider_than_the_terminal():
    """Whatever the cells, each line fits (the terminal must not wrap a row)."""
    rows = [{"id": i, "description": "word " * 40, "labels": "x" * 90, "hparams": {
        "a_very_long_hyperparameter_name_without_breaks_anywhere_at_all": "v" * 70}}
            for i in range(3)]
    for width in (40, 60, 80, 120):
        text = table_text(rows, ["id", "description", "hparams", "labels"], width=width)
        assert all(len(line) <= width for line in text.splitlines()), (width, text)
    text = table_text([{"x": "y" * 200}], ["x"], width=50)
    assert all(len(line) <= 50 for line in text.splitlines()), text


def test_wrap_words_keeps_pairs_whole_and_breaks_long_ones_at_boundaries():
    from determined.cli._table import wrap_words

    assert wrap_words("lr=0.1 dropout=0.25 layers=4", 20) == ["lr=0.1 dropout=0.25", "layers=4"]
    assert wrap_words("a_rather_long_hyperparameter_name=0.0001235 lr=0.1", 20) == [
        "a_rather_long_", "hyperparameter_name=", "0.0001235", "lr=0.1"]
    assert wrap_words("", 10) == [""]
    assert all(len(line) <= 5 for line in wrap_words("abcdefghijkl x", 5))


@pytest.fixture(scope="module")
def local_dir(tmp_path_factory):
    """The records of a finished local experiment: one trial, two workloads."""
    tiny = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tiny_pytorch"
    tmp = tmp_path_factory.mktemp("tables")
    cfg = yaml.safe_load((tiny / "const.yaml").read_text())
    cfg["searcher"]["max_length"] = {"batches": 20}
    (tmp / "c.yaml").write_text(yaml.safe_dump(cfg))
    out = run_det(["e", "create", tmp / "c.yaml", tiny, "--local-dir", tmp / "local",
                   "--no-progress"])
    assert out.returncode == 0, out.stderr
    return tmp / "local"


def tables(text):
    """The tables in ``det``'s output, in order, each as its lines (without its title)."""
    found = []
    for block in text.split("\n\n"):
        lines = [line for line in block.splitlines() if line.strip()]
        if any(set(line) <= {"-", "+"} for line in lines):
            found.append(lines if "|" in lines[0] else lines[1:])
    return found


@pytest.mark.parametrize("args", [["t", "describe", "1", "--metrics"], ["e", "describe", "1"],
                                  ["e", "list-checkpoints", "1"]])
def test_hidden_columns_are_named_as_their_headers_read(local_dir, args):
    """On an 80-column terminal the ``(hidden: ...)`` line under a table names what it
    left out as the headers read (``ended``, ``ckpt state``), the headers the same
    table shows in full when piped, not the fields' names (``end_time``)."""
    code, shown = run_det_in_terminal([*args, "--local-dir", local_dir], columns=80)
    piped = run_det([*args, "--local-dir", local_dir])
    assert code == 0 and piped.returncode == 0, (shown, piped.stderr)
    narrow, full = tables(shown), tables(piped.stdout)
    assert len(narrow) == len(full) and any(hidden_names(t) for t in narrow), shown
    for table, whole in zip(narrow, full):
        headers = table_headers(whole)  # piped: every column
        assert not hidden_names(whole), piped.stdout
        for name in hidden_names(table):
            assert name in headers, (name, headers, shown)  # whole, never cut
            assert name not in table_headers(table), (name, shown)


def test_step_columns_are_headed_with_the_experiments_unit():
    script = {"entrypoint": "python3 train.py", "searcher": {"max_length": {"epochs": 3}}}
    trial_class = {"entrypoint": "model_def:T", "searcher": {"max_length": {"batches": 9}}}
    assert step_labels([trial_class]) == {}  # LABELS' "batches", as in 0.13
    assert step_labels([script, script]) == {"total_batches": "epochs", "batches": "epochs"}
    assert step_labels([script, trial_class])["batches"] == "steps"  # units differ
    # The table heads the step column so; CSV keeps the field's name.
    rows = [{"trial_id": 1, "batches": 3}]
    text = table_text(rows, ["trial_id", "batches"], width=80, labels=step_labels([script]))
    assert text.splitlines()[0].split() == ["trial", "|", "epochs"], text
    assert csv_text(rows, ["trial_id", "batches"]).splitlines()[0] == "trial_id,batches"
