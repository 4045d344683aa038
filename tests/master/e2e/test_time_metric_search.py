"""An adaptive_asha search with ``searcher.time_metric`` over a real Core API script
(tests/fixtures/time_metric/train.py) on a master with its embedded agent: scripts
train their own length, the searcher stops the weaker ones through
``should_preempt()`` (they checkpoint, exit 0 and end COMPLETED, never resumed), and
the experiment shows sensible progress throughout."""

import pathlib
import time

import pytest
import yaml

from master_testing import create_experiment

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SCRIPT_DIR = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "time_metric"


def trial_log(api, trial_id):
    rows = api.get(f"/trials/{trial_id}/logs", params={"limit": 100000}).json()["logs"]
    return "\n".join(r["line"] for r in rows)


def test_time_metric_asha_over_a_core_api_script(master_factory):
    master = master_factory(slots=2)
    config = yaml.safe_load((SCRIPT_DIR / "asha.yaml").read_text())
    with master.client() as api:
        exp_id = create_experiment(api, config, SCRIPT_DIR)
        seen = []  # the progress the API shows while the search runs
        deadline = time.monotonic() + 400
        while True:
            exp = api.get(f"/experiments/{exp_id}").json()
            seen.append(exp.get("progress"))
            if exp["state"] in ("COMPLETED", "ERROR", "CANCELED"):
                break
            assert time.monotonic() < deadline, exp
            time.sleep(0.3)
        assert all(isinstance(p, (int, float)) and 0.0 <= p <= 1.0 for p in seen), seen
        assert any(0.0 < p < 1.0 for p in seen), seen
        assert exp["state"] == "COMPLETED", exp
        trials = exp["trials"]
        assert len(trials) == 6
        assert all(t["state"] == "COMPLETED" for t in trials), trials
        batches = sorted(t["total_batches"] for t in trials)
        assert batches[-1] == 32 and batches[0] < 32, batches
        assert exp["progress"] == pytest.approx(1.0)
        stopped = next(t for t in trials if t["total_batches"] < 32)
        log = trial_log(api, stopped["id"])
        assert "stopped by the platform at step" in log
        assert "resumed from" not in log  # stopped by the searcher: never resumed
        metrics = api.get(f"/trials/{stopped['id']}").json()["metrics"]
        validations = [m for m in metrics if m["kind"] == "validation"]
        assert validations and all(m["total_batches"] % 4 == 0 for m in validations)
