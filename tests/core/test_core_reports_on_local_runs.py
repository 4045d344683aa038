"""Core API reports through a ``--local`` script trial (the real CLI, driver, trial
process and script, tests/fixtures/core_reports/report.py): training and progress
reports are one-way on the script's link and forwarded in batches, and none is lost or
reordered, also when the script is SIGKILLed right after reporting."""

import sqlite3

import pytest
import yaml

from det_cli_testing import run_det
from tests.core.core_testing import ROOT, report_rows

pytestmark = pytest.mark.timeout(600)

SCRIPT_DIR = ROOT / "tests" / "fixtures" / "core_reports"


def _run(tmp_path, **hparams):
    cfg = yaml.safe_load((SCRIPT_DIR / "const.yaml").read_text())
    cfg["hyperparameters"].update(hparams)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    local = tmp_path / "local"
    out = run_det(["e", "create", config, SCRIPT_DIR, "--local", "--local-dir", local,
                   "--no-progress"])
    with sqlite3.connect(local / "local.db") as db:
        rows = db.execute("SELECT kind, total_batches FROM metrics ORDER BY id").fetchall()
        (state,) = db.execute("SELECT state FROM trials").fetchone()
    return out, rows, state


def test_every_report_of_a_script_is_stored_in_order(tmp_path):
    out, rows, state = _run(tmp_path, steps=2000, validate_every=250)
    assert out.returncode == 0, out.stdout + out.stderr
    assert state == "COMPLETED"
    assert rows == report_rows(2000, 250)


def test_a_script_sigkilled_right_after_reporting_loses_no_report(tmp_path):
    out, rows, state = _run(tmp_path, steps=2000, validate_every=500, end="sigkill")
    assert state == "ERROR", out.stdout + out.stderr
    assert [r for r in rows if r[0] == "training"] == [("training", s) for s in range(1, 2001)]
    assert [r for r in rows if r[0] == "validation"] == [
        ("validation", s) for s in (500, 1000, 1500, 2000)]
