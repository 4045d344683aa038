"""Core API reports through a script trial on a real master (its embedded agent, the
trial process's REST host): training and progress reports are one-way on the script's
link and forwarded in batches; none is lost or reordered, also when the script is
SIGKILLed right after reporting, and a report the master refuses reaches the script
(tests/fixtures/core_reports/report.py)."""

import pathlib

import pytest
import yaml

from master_testing import create_experiment, wait_for_state
from tests.core.core_testing import report_rows

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SCRIPT_DIR = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "core_reports"


def _run(api, **hparams):
    config = yaml.safe_load((SCRIPT_DIR / "const.yaml").read_text())
    config["hyperparameters"].update(hparams)
    exp_id = create_experiment(api, config, SCRIPT_DIR)
    exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=300)
    (trial,) = exp["trials"]
    metrics = api.get(f"/trials/{trial['id']}").json()["metrics"]
    return exp, trial, [(m["kind"], m["total_batches"]) for m in metrics]


def _trial_log(api, trial_id):
    rows = api.get(f"/trials/{trial_id}/logs", params={"limit": 100000}).json()["logs"]
    return "\n".join(r["line"] for r in rows)


def test_reports_are_stored_in_order_and_survive_a_sigkill(master_factory):
    master = master_factory(slots=1)
    with master.client() as api:
        exp, _, rows = _run(api, steps=2000, validate_every=250)
        assert exp["state"] == "COMPLETED", exp
        assert rows == report_rows(2000, 250)

        exp, trial, rows = _run(api, steps=2000, validate_every=500, end="sigkill")
        assert exp["state"] == "ERROR", exp
        assert "killed by signal 9" in _trial_log(api, trial["id"])
        assert [r for r in rows if r[0] == "training"] == [
            ("training", s) for s in range(1, 2001)]
        assert [r for r in rows if r[0] == "validation"] == [
            ("validation", s) for s in (500, 1000, 1500, 2000)]


def test_a_refused_report_raises_at_the_scripts_next_request(master_factory):
    master = master_factory(slots=1)
    with master.client() as api:
        exp, trial, rows = _run(api, steps=5, end="bad_report")
        assert exp["state"] == "ERROR", exp
        assert rows == [("training", s) for s in range(1, 6)]
        log = _trial_log(api, trial["id"])
        assert "determined.errors.ReportError: report_training_metrics: the trial's host " \
               "rejected a report" in log, log
        assert "reported 5 steps" not in log  # the script stopped at the refusal

        # Refused, then no request: the trial fails at the script's exit, saying why.
        exp, trial, rows = _run(api, steps=5, end="bad_report_exit")
        assert exp["state"] == "ERROR", exp
        assert rows == [("training", s) for s in range(1, 6)]
        log = _trial_log(api, trial["id"])
        assert "reported 5 steps" in log and "not every report of the script was stored " \
               "(report_training_metrics: the trial's host rejected a report" in log, log
