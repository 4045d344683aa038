"""The web UI's API on what a user watching experiments sees: a paused experiment's
duration stops counting, and a failed trial's row carries a one-line ``error_summary``
in the experiment's trial list and its whole ``error`` on its own page (whose failure
box shows it; the REST API, which the CLI reads, keeps the whole error in lists too),
against a real master running real trials."""

import datetime
import pathlib
import shutil
import time

import pytest
import yaml

from master_testing import MasterProcess, create_experiment, wait_for_state, wait_until

TINY = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "tiny_pytorch"

RAISE_TRIAL = '''from model_def import TinyTrial


class RaiseTrial(TinyTrial):
    def __init__(self, context):
        raise ValueError("no rows in train.csv")
'''


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    m = MasterProcess(str(tmp_path_factory.mktemp("ui_paused_master")), slots=1)
    try:
        m.start(timeout=120)
        with m.client() as c:
            yield c
    finally:
        m.stop()


def _config(**changes):
    config = yaml.safe_load((TINY / "const.yaml").read_text())
    config.update(changes)
    return config


def _duration(api, exp_id):
    return api.get(f"/ui/experiments/{exp_id}").json()["duration"]


def _listed_duration(api, exp_id):
    rows = api.get("/ui/experiments", params={"archived": "any"}).json()["experiments"]
    return next(r["duration"] for r in rows if r["id"] == exp_id)


def test_an_experiment_made_paused_has_a_duration_that_does_not_grow(api):
    exp_id = create_experiment(api, _config(description="made paused"), TINY, activate=False)
    first = _duration(api, exp_id)
    time.sleep(1.5)
    assert _duration(api, exp_id) == first
    assert _listed_duration(api, exp_id) == first
    assert 0 <= first < 1.5


def test_a_paused_experiment_stops_counting_and_counts_again_when_activated(api):
    exp_id = create_experiment(api, _config(
        description="paused while running", searcher={
            "name": "single", "metric": "validation_loss", "max_length": {"batches": 1000000}}),
        TINY)

    def trained():
        trials = api.get(f"/experiments/{exp_id}/trials").json()["trials"]
        return trials and trials[0]["total_batches"] > 0
    wait_until(trained, timeout=180, what="the trial to train")
    try:
        assert api.post(f"/experiments/{exp_id}/pause").status_code == 200
        start = datetime.datetime.fromisoformat(
            api.get(f"/ui/experiments/{exp_id}").json()["start_time"])

        # It stops at the pause (stored with the state), not when the trial's process
        # has checkpointed and exited a little later.
        paused = _duration(api, exp_id)
        time.sleep(1.5)
        assert _duration(api, exp_id) == paused
        assert _listed_duration(api, exp_id) == paused
        since_start = (datetime.datetime.now(datetime.timezone.utc) - start).total_seconds()
        assert 0 < paused < since_start - 1.0
        assert api.get(f"/ui/experiments/{exp_id}").json()["end_time"] is None
        assert api.post(f"/experiments/{exp_id}/activate").status_code == 200
        time.sleep(0.5)
        # Running again, it is the time since its start again (the pause included).
        assert _duration(api, exp_id) >= since_start
    finally:
        api.post(f"/experiments/{exp_id}/kill")
        wait_for_state(api, exp_id, ["CANCELED", "COMPLETED", "ERROR"])


def test_a_failed_trials_ui_rows_carry_its_error(api, tmp_path):
    model_dir = tmp_path / "model"
    shutil.copytree(TINY, model_dir, ignore=shutil.ignore_patterns("__pycache__"))
    (model_dir / "raise_def.py").write_text(RAISE_TRIAL)
    exp_id = create_experiment(api, _config(description="raises", max_restarts=0,
                                            entrypoint="raise_def:RaiseTrial"), model_dir)
    wait_for_state(api, exp_id, ["ERROR"], timeout=180)
    trial = api.get(f"/experiments/{exp_id}/trials").json()["trials"][0]
    error = trial["error"]
    assert error.startswith("Trial failed (exit code") and "Traceback" in error, error
    assert error.rstrip().endswith("ValueError: no rows in train.csv"), error
    page = api.get(f"/ui/trials/{trial['id']}/workloads").json()
    assert page["trial"]["error"] == error
    summary = error[:error.index(")") + 1] + ": ValueError: no rows in train.csv"
    assert page["trial"]["error_summary"] == summary
    assert page["trial"]["restarts"] == 0
    rows = api.get(f"/ui/experiments/{exp_id}").json()["trials"]
    assert [(r["error_summary"], "error" in r) for r in rows] == [(summary, False)]
    assert api.get(f"/ui/experiments/{exp_id}").json()["config"]["max_restarts"] == 0
    # `det e wait` and `--follow` read the REST experiment: the whole error, as before.
    assert [t["error"] for t in api.get(f"/experiments/{exp_id}").json()["trials"]] == [error]
    ok = create_experiment(api, _config(description="fine"), TINY)
    wait_for_state(api, ok, ["COMPLETED"], timeout=180)
    assert [r["error_summary"] for r in api.get(f"/ui/experiments/{ok}").json()["trials"]] \
        == [None]
