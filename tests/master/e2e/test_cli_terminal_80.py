"""``det`` against a real master as a person meets it: on a terminal 80 columns wide.

Trial and experiment tables fit (headers wrapped at ``._- ``, hyperparameters over
several lines, the trial id of one trial's workloads left out, the searcher metric's
column named after it); a failed trial is counted in the follow status and its
describe says how to see why; log lines and tracebacks are never folded; checkpoint
metrics read ``name=value`` to 4 significant digits. (Groups given no action, such as
``det checkpoint``, list their actions: tests/cli/test_cli_no_action.py.)"""

import json
import pathlib
import re

import pytest
import yaml

from det_cli_testing import (hidden_names, run_det, run_det_in_terminal, table_headers,
                             table_lines, table_rule)

LONG_HPARAMS = {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2,
                "a_rather_long_hyperparameter_name": 0.000123456789,
                "another_long_hyperparameter": "a-string-value", "sleep": 0.01}


def det(master, *args, code=0):
    out = run_det(["-m", master.url, *args], timeout=240)
    assert out.returncode == code, f"{args}: {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def det80(master, *args, code=0):
    """``det args`` on an 80-column terminal: its output (stdout and stderr)."""
    rc, text = run_det_in_terminal(["-m", master.url, *args], columns=80)
    assert rc == code, f"{args}: {rc}\n{text}"
    return text


def write_config(tmp, tiny_dir, name, **changes):
    cfg = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    cfg.update(changes)
    path = tmp / name
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def runs(shared_master, tmp_path_factory):
    """A completed experiment with long hyperparameter names, and a grid of two trials
    (one fails at batch 3), followed on an 80-column terminal."""
    tiny_dir = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "tiny_pytorch"
    tmp = tmp_path_factory.mktemp("cfg")
    long_cfg = write_config(tmp, tiny_dir, "long.yaml", hyperparameters=LONG_HPARAMS,
                            searcher={"name": "single", "metric": "validation_loss",
                                      "max_length": {"batches": 40}})
    created = det(shared_master, "e", "create", long_cfg, tiny_dir, "--json")
    long_id = json.loads(created.stdout)["id"]
    det(shared_master, "e", "wait", long_id, "--polling-interval", "0.3")
    grid_cfg = write_config(
        tmp, tiny_dir, "grid.yaml", max_restarts=0,
        hyperparameters=dict(LONG_HPARAMS, fail_at_batch={"type": "categorical",
                                                          "vals": [3, 100000]}),
        searcher={"name": "grid", "metric": "validation_loss",
                  "max_length": {"batches": 40}})
    followed = det80(shared_master, "e", "create", grid_cfg, tiny_dir, "-f")
    grid_id = int(re.search(r"Created experiment (\d+)", followed).group(1))
    (grid,) = json.loads(det(shared_master, "e", "describe", grid_id, "--json").stdout)
    failed = next(t["id"] for t in grid["trials"] if t["state"] == "ERROR")
    (long_exp,) = json.loads(det(shared_master, "e", "describe", long_id, "--json").stdout)
    return {"long": long_exp, "grid": grid, "failed": failed, "followed": followed}


def test_trial_describe_fits_80_columns_with_whole_headers(shared_master, runs):
    (trial,) = runs["long"]["trials"]
    text = det80(shared_master, "t", "describe", trial["id"], "--metrics")
    assert all(len(line) <= 80 for line in text.splitlines()), text
    workloads = table_lines(text, f"Workloads (trial {trial['id']})")  # which, once
    names = table_headers(workloads)
    # One trial's workloads: its id (in the table above) is no column of them; the
    # searcher metric's column is named after it, not a bare "validation".
    assert "trial" not in names and "exp" not in names, text
    assert names[:2] == ["batches", "checkpoint"] and "validation_loss" in names, text
    assert all("\u2026" not in line for line in workloads[:2]), text  # headers wrapped, not cut
    # What it left out is named as the headers read (the time column is "ended").
    assert hidden_names(workloads)[:2] == ["ended", "ckpt state"], text
    trial_table = table_lines(text, "Trial")
    assert "best validation_loss" in table_headers(trial_table), text
    # Piped (no terminal), every column stays, for scripts.
    piped = det(shared_master, "t", "describe", trial["id"]).stdout
    assert table_headers(table_lines(piped, "Workloads"))[:2] == ["trial", "batches"], piped


def column_cells(lines, header):
    """The cells of the column ``header`` of a table's lines, one per row, each
    joined from the lines it continues on (a row starts where the first column has
    text)."""
    rule = table_rule(lines)
    col = table_headers(lines).index(header)
    cells = []
    for line in lines[rule + 1:]:
        if line.startswith("("):  # (hidden: ...)
            break
        parts = [p.strip() for p in line.split(" | ")]
        piece = parts[col] if col < len(parts) else ""
        if parts[0]:
            cells.append(piece)
        elif piece:
            cells[-1] += piece if cells[-1][-1:] in "._-=" else " " + piece
    return cells


def test_long_hyperparameters_continue_on_following_lines(shared_master, runs):
    exp_id = runs["long"]["id"]
    for args, title in ((("e", "lt", exp_id), None), (("e", "describe", exp_id), "Trials")):
        text = det80(shared_master, *args)
        lines = text.splitlines()
        assert all(len(line) <= 80 for line in lines), text
        table = table_lines(text, title) if title else lines
        (cell,) = column_cells(table, "hyperparameters")
        assert sorted(cell.split()) == [
            "a_rather_long_hyperparameter_name=0.0001235",
            "another_long_hyperparameter=a-string-value", "dropout=0.2",
            "global_batch_size=16", "lr=0.1", "sleep=0.01"], text


def test_follow_counts_the_failed_trial_and_prints_log_lines_whole(shared_master, runs):
    followed, failed = runs["followed"], runs["failed"]
    grid_id = runs["grid"]["id"]
    status = [l for l in followed.splitlines() if l.startswith(f"Experiment {grid_id} ")]
    # The live status said "1 error" where it had room, nothing of it at 80 columns.
    assert any("1 failed" in l for l in status), followed
    # The trial's last log line names a long path: one line, as the trial wrote it.
    line = next(l for l in followed.splitlines() if l.startswith(f"trial {failed} failed: "))
    assert line.endswith("raised ValueError: planned failure at batch 3"), followed
    assert len(line) > 80
    text = det80(shared_master, "t", "logs", failed, "-f")
    assert line in text.splitlines(), text
    # Piped, the plain status lines count it too.
    plain = det(shared_master, "e", "wait", runs["grid"]["id"], code=0).stderr
    assert "1 failed" in plain and "error" not in plain, plain


def test_describe_of_a_failed_trial_says_why_and_where_to_look(shared_master, runs):
    failed = runs["failed"]
    text = det80(shared_master, "t", "describe", failed)
    assert f"Trial {failed} failed (exit code " in text, text
    assert "ValueError: planned failure at batch 3" in text.splitlines(), text
    assert f"Its whole log: `det trial logs {failed}`" in text, text
    ok = next(t["id"] for t in runs["grid"]["trials"] if t["state"] == "COMPLETED")
    assert "det trial logs" not in det80(shared_master, "t", "describe", ok)


def test_checkpoint_metrics_read_name_value_to_4_digits(shared_master, runs):
    exp = runs["long"]
    ckpt = json.loads(det(shared_master, "c", "list", exp["id"], "--json").stdout)[0]  # newest
    full = ckpt["validation_metric"]
    assert len(repr(full)) > 8  # a value with more than 4 significant digits
    listed = det80(shared_master, "checkpoint", "list", exp["id"])
    assert all(len(line) <= 80 for line in listed.splitlines()), listed
    assert f"{full:.4g}" in listed and repr(full) not in listed, listed
    assert ckpt["uuid"] in listed
    described = det80(shared_master, "checkpoint", "describe", ckpt["uuid"])
    # Every line fits but the path's: a path stays whole, to copy.
    assert all(len(line) <= 80 for line in described.splitlines()
               if not line.startswith("Path:")), described
    assert f"validation_loss={full:.4g}" in described, described
    assert ckpt["uuid"] in described and "Path:" in described, described
    as_json = json.loads(det(shared_master, "c", "describe", ckpt["uuid"], "--json").stdout)
    assert full in as_json["validation"]["metrics"]["validationMetrics"].values()
