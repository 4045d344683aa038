"""Script entrypoints on a real master with its embedded agent: the script
(tests/fixtures/script_trial/train.py, the raw link) completes, its output is the
trial's log, pause/activate stops and resumes it, a SIGKILLed script restarts from its
latest checkpoint, and bad entrypoints are refused with a 400."""

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
import yaml

from master_testing import create_experiment, wait_for_state, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SCRIPT_DIR = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "script_trial"


def script_config(max_length=6, **hparams):
    config = yaml.safe_load((SCRIPT_DIR / "const.yaml").read_text())
    config["hyperparameters"].update(hparams)
    config["searcher"]["max_length"] = {"batches": max_length}
    return config


def trial_log(api, trial_id):
    rows = api.get(f"/trials/{trial_id}/logs", params={"limit": 100000}).json()["logs"]
    return "\n".join(r["line"] for r in rows)


def wait_for_step(markers, trial_id, step, timeout=120):
    path = markers / f"{trial_id}.steps"
    wait_until(lambda: path.exists() and path.read_text() and int(path.read_text()) >= step,
               timeout=timeout, what=f"the script at step {step}")


def test_script_completes_and_its_output_is_the_trial_log(master_factory):
    master = master_factory(slots=1)
    with master.client() as api:
        exp_id = create_experiment(api, script_config(), SCRIPT_DIR)
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=180)
        assert exp["state"] == "COMPLETED", exp
        assert exp["description"] == "raw-link-script"  # the config's 0.38 `name`
        (trial,) = exp["trials"]
        assert trial["state"] == "COMPLETED" and trial["total_batches"] == 6
        metrics = api.get(f"/trials/{trial['id']}").json()["metrics"]
        assert [(m["kind"], m["total_batches"]) for m in metrics] == [
            *(("training", b) for b in range(1, 7)), ("validation", 6)]
        ckpts = api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
        assert [c["total_batches"] for c in ckpts] == [6]
        assert os.path.isfile(os.path.join(master.data_dir, "checkpoints", ckpts[0]["uuid"],
                                           "state.json"))
    out = subprocess.run([sys.executable, "-m", "determined.cli", "trial", "logs",
                          str(trial["id"])], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, DET_MASTER=master.url))
    assert out.returncode == 0, out.stderr
    assert "closed at step 6" in out.stdout and "script exited with code 0" in out.stdout
    # The exit is told once by the trial process and once by the master, as with
    # --local (a third line, "trial N exited: script exit code 0", said it again).
    said = [line for line in out.stdout.splitlines() if "exit" in line]
    assert len(said) == 2, said


def test_pause_stops_the_script_and_activate_resumes_it(master_factory, tmp_path):
    master = master_factory(slots=1)
    markers = tmp_path / "markers"
    markers.mkdir()
    # 11 s left after step 3 for the pause below to land mid-run on a loaded machine.
    config = script_config(40, step_seconds=0.3, marker_dir=str(markers))
    with master.client() as api:
        exp_id = create_experiment(api, config, SCRIPT_DIR)
        wait_for_step(markers, 1, 3)
        assert api.post(f"/experiments/{exp_id}/pause").status_code == 200
        wait_until(lambda: api.get(f"/experiments/{exp_id}").json()["trials"][0]["state"]
                   in ("PAUSED", "IDLE", "PENDING") and "script exited" in trial_log(api, 1),
                   timeout=120, what="the script to stop")
        paused_at = int((markers / "1.steps").read_text())
        assert paused_at < 40
        time.sleep(1.0)
        assert int((markers / "1.steps").read_text()) == paused_at  # nothing runs
        assert api.post(f"/experiments/{exp_id}/activate").status_code == 200
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=240)
        assert exp["state"] == "COMPLETED", exp
        (trial,) = exp["trials"]
        assert trial["restarts"] == 0 and trial["total_batches"] == 40
        log = trial_log(api, trial["id"])
        assert "stopping at step" in log
        assert f"resumed from checkpoint {trial['latest_checkpoint']}" not in log  # older one
        assert "resumed from checkpoint" in log


def test_sigkilled_script_restarts_from_its_latest_checkpoint(master_factory, tmp_path):
    master = master_factory(slots=1)
    markers = tmp_path / "markers"
    markers.mkdir()
    # 9 s left after step 3 for the kill below to land mid-run on a loaded machine.
    config = script_config(12, step_seconds=1.0, ckpt_every=2, marker_dir=str(markers))
    with master.client() as api:
        exp_id = create_experiment(api, config, SCRIPT_DIR)
        wait_for_step(markers, 1, 3)
        os.kill(int((markers / "1.pid").read_text()), signal.SIGKILL)
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=240)
        assert exp["state"] == "COMPLETED", exp
        (trial,) = exp["trials"]
        assert trial["restarts"] == 1 and trial["total_batches"] == 12
        log = trial_log(api, trial["id"])
        assert "killed by signal 9" in log and "resumed from checkpoint" in log
        # Its error names the signal, not the script's last line before it.
        error = api.get(f"/trials/{trial['id']}").json()["error"]
        assert error == "Trial failed (exit code 137): the script was killed by signal 9"


def test_failing_script_uses_up_its_restarts(master_factory):
    master = master_factory(slots=1)
    config = script_config(exit_code=9)
    config["max_restarts"] = 1
    with master.client() as api:
        exp_id = create_experiment(api, config, SCRIPT_DIR)
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=180)
        (trial,) = exp["trials"]
        assert trial["state"] == "ERROR" and trial["restarts"] == 1
        assert "exit code 9" in trial_log(api, trial["id"])


def test_bad_entrypoints_are_refused_naming_the_field(master_factory):
    import base64

    from determined.common.api import pack_context

    master = master_factory(slots=1)
    packed = base64.b64encode(pack_context(str(SCRIPT_DIR))).decode()
    with master.client() as api:
        for entrypoint, expected in (("python3 missing.py", "has no file 'missing.py'"),
                                     (["python3", 7], "a list holds only strings"),
                                     ("model_def:", "<module>:<object>")):
            config = dict(script_config(), entrypoint=entrypoint)
            r = api.post("/experiments", json={"config": config, "model_def": packed})
            assert r.status_code == 400, r.text
            assert "entrypoint" in r.text and expected in r.text, r.text


def test_script_runner_routes_answer_and_refuse_bad_bodies(master_factory, tmp_path):
    import httpx

    from determined.master.db import Store

    master = master_factory(slots=1)
    markers = tmp_path / "markers"
    markers.mkdir()
    with master.client() as api:
        exp_id = create_experiment(api, script_config(400, step_seconds=0.1,
                                                      marker_dir=str(markers)), SCRIPT_DIR)
        wait_for_step(markers, 1, 1)
        store = Store("sqlite:///" + os.path.join(master.data_dir, "master.db"))
        token = store.create_trial_token(1)
        store.close()
        with httpx.Client(base_url=master.url + "/api/v1/trial-runner", timeout=30,
                          headers={"Authorization": f"Bearer {token}"}) as runner:
            assert runner.get("/should-stop").json() == {"stop": False}
            assert runner.post("/progress", json={"units": 2.5}).json() == {"stop": False}
            for path, body, field in (("/progress", {"units": -1}, "units"),
                                      ("/progress", {"units": "half"}, "units"),
                                      ("/progress", {}, "units"),
                                      ("/script-exited", {"code": 999}, "code"),
                                      ("/script-exited", {"code": 0, "x": 1}, "x")):
                r = runner.post(path, json=body)
                assert r.status_code == 400 and field in r.text, (path, body, r.text)
            assert api.post(f"/experiments/{exp_id}/pause").status_code == 200
            assert runner.get("/should-stop").json() == {"stop": True}
        assert api.post(f"/experiments/{exp_id}/kill").status_code == 200
        wait_for_state(api, exp_id, ["CANCELED"], timeout=120)


def test_test_mode_on_a_master_runs_the_script(master_factory, tmp_path):
    master = master_factory(slots=1)
    config = tmp_path / "script.yaml"
    config.write_text(yaml.safe_dump(script_config()))
    out = subprocess.run([sys.executable, "-m", "determined.cli", "e", "create", str(config),
                          str(SCRIPT_DIR), "--test"], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ, DET_MASTER=master.url))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "closed at step 1" in out.stdout + out.stderr  # the trial's streamed log


def test_core_script_reads_the_experiments_best_validation(master_factory, tmp_path):
    best_dir = SCRIPT_DIR.parent / "core_best"
    config = yaml.safe_load((best_dir / "const.yaml").read_text())
    out = tmp_path / "seen.json"
    config["hyperparameters"]["out_file"] = str(out)
    master = master_factory(slots=1)
    with master.client() as api:
        exp_id = create_experiment(api, config, best_dir)
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=180)
        assert exp["state"] == "COMPLETED", exp
    assert yaml.safe_load(out.read_text()) == [3.0, 1.0, 1.0]
