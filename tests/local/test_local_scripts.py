"""Script entrypoints with ``det experiment create --local`` (and ``--test``): the real
CLI, real trial processes and scripts (tests/fixtures/script_trial/train.py talks to
its wrapper through the raw link)."""

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import pytest
import yaml

from det_cli_testing import run_det

pytestmark = pytest.mark.timeout(600)


FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def script_dir():
    return FIXTURES / "script_trial"


def _config(tmp_path, script_dir, **changes):
    cfg = yaml.safe_load((script_dir / "const.yaml").read_text())
    hparams = changes.pop("hparams", {})
    cfg["hyperparameters"].update(hparams)
    cfg.update(changes)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _create(tmp_path, config, script_dir, *extra):
    out = run_det(["e", "create", config, script_dir, "--local", "--local-dir",
                   tmp_path / "local", "--json", "--no-progress", *extra])
    result = json.loads(out.stdout) if out.stdout.strip().startswith("{") else None
    return out, result


def _logs(tmp_path, trial_id):
    out = run_det(["t", "logs", str(trial_id), "--local-dir", tmp_path / "local"])
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_script_completes_with_records_and_logs(tmp_path, script_dir):
    out, result = _create(tmp_path, script_dir / "const.yaml", script_dir)
    assert out.returncode == 0, out.stdout + out.stderr
    assert result["state"] == "COMPLETED"
    (trial,) = result["trials"]
    assert trial["state"] == "COMPLETED" and trial["batches"] == 6
    assert trial["best_metric"] == pytest.approx(1 / 7)
    with open(os.path.join(result["best_checkpoint_path"], "state.json")) as f:
        assert json.load(f) == {"steps": 6}
    logs = _logs(tmp_path, trial["trial_id"])
    assert "closed at step 6" in logs  # the script's own output
    assert "script exited with code 0" in logs
    listed = run_det(["e", "list", "--local-dir", tmp_path / "local", "--json"])
    assert json.loads(listed.stdout)[0]["description"] == "raw-link-script"  # config `name`


def test_crash_restarts_from_the_latest_checkpoint(tmp_path, script_dir):
    config = _config(tmp_path, script_dir, hparams={"ckpt_every": 2, "crash_at": 5})
    out, result = _create(tmp_path, config, script_dir)
    assert out.returncode == 0, out.stdout + out.stderr
    (trial,) = result["trials"]
    assert trial["state"] == "COMPLETED" and trial["restarts"] == 1 and trial["batches"] == 6
    logs = _logs(tmp_path, trial["trial_id"])
    assert "crashing at step 5" in logs and "exit code 3" in logs
    assert "at step 4" in logs.split("resumed from checkpoint", 1)[1].splitlines()[0]


def test_a_script_in_epochs_is_shown_in_epochs(tmp_path, script_dir):
    """A script's steps are in the searcher's unit: with ``max_length: {epochs: 3}`` the
    progress lines and the summary said "validated at 3 batches" and "batches"."""
    config = _config(tmp_path, script_dir, hparams={"ckpt_every": 2, "crash_at": 3},
                     searcher={"name": "single", "metric": "loss",
                               "max_length": {"epochs": 3}})
    out = run_det(["e", "create", config, script_dir, "--local-dir", tmp_path / "local"],
                  env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert re.search(r"restart 1, from checkpoint\s+\S+ at 2 epochs\n", text), text
    assert re.search(r"trial 1 resumed from checkpoint \S+ at\s+2 epochs\n", text), text
    assert "trial 1 validated at 3 epochs: loss=0.25\n" in text, text
    assert "┃ epochs  ┃" in text and "batch" not in text, text


def test_nonzero_exit_without_restarts_left_fails_the_trial(tmp_path, script_dir):
    config = _config(tmp_path, script_dir, hparams={"exit_code": 7}, max_restarts=1)
    out, result = _create(tmp_path, config, script_dir)
    assert out.returncode != 0
    (trial,) = result["trials"]
    assert trial["state"] == "ERROR" and trial["restarts"] == 1
    assert "exit code 7" in trial["error"]


def test_sigkilled_script_restarts_and_completes(tmp_path, script_dir):
    markers = tmp_path / "markers"
    markers.mkdir()
    config = _config(tmp_path, script_dir, searcher={
        "name": "single", "metric": "loss", "max_length": {"batches": 12}},
        # 9 s left after step 3 for the kill below to land mid-run on a loaded machine.
        hparams={"ckpt_every": 2, "step_seconds": 1.0, "marker_dir": str(markers)})
    proc = subprocess.Popen(
        [sys.executable, "-m", "determined.cli", "e", "create", str(config), str(script_dir),
         "--local", "--local-dir", str(tmp_path / "local"), "--json", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    steps = markers / "1.steps"
    deadline = time.monotonic() + 120
    while not (steps.exists() and steps.read_text() and int(steps.read_text()) >= 3):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the script never reached step 3"
        time.sleep(0.1)
    os.kill(int((markers / "1.pid").read_text()), signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stdout + stderr
    (trial,) = json.loads(stdout)["trials"]
    assert trial["state"] == "COMPLETED" and trial["restarts"] == 1 and trial["batches"] == 12
    logs = _logs(tmp_path, 1)
    assert "killed by signal 9" in logs and "resumed from checkpoint" in logs


def test_ctrl_c_pauses_the_script_which_resumes_later(tmp_path, script_dir):
    markers = tmp_path / "markers"
    markers.mkdir()
    config = _config(tmp_path, script_dir, searcher={
        "name": "single", "metric": "loss", "max_length": {"batches": 30}},
        # 8 s left after step 3 for the Ctrl-C below to land mid-run on a loaded machine.
        hparams={"step_seconds": 0.3, "marker_dir": str(markers)})
    local = tmp_path / "local"
    proc = subprocess.Popen(
        [sys.executable, "-m", "determined.cli", "e", "create", str(config), str(script_dir),
         "--local", "--local-dir", str(local), "--json", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    steps = markers / "1.steps"
    deadline = time.monotonic() + 120
    while not (steps.exists() and steps.read_text() and int(steps.read_text()) >= 3):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the script never reached step 3"
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=180)
    (exp,) = json.loads(run_det(["e", "describe", "1", "--local-dir", local, "--json"]).stdout)
    assert exp["state"] == "PAUSED", exp
    logs = _logs(tmp_path, 1)
    assert "stopping at step" in logs and "killed by signal" not in logs
    out = run_det(["e", "resume", "1", "--local-dir", local, "--json", "--no-progress"])
    assert out.returncode == 0, out.stdout + out.stderr
    (trial,) = json.loads(out.stdout)["trials"]
    assert trial["state"] == "COMPLETED" and trial["batches"] == 30 and trial["restarts"] == 0
    assert "resumed from checkpoint" in _logs(tmp_path, 1)


def test_test_mode_runs_one_short_train_and_a_validate(tmp_path, script_dir):
    out = run_det(["e", "create", script_dir / "const.yaml", script_dir, "--local", "--test",
                   "--local-dir", tmp_path / "local", "--json"])
    assert out.returncode == 0, out.stdout + out.stderr
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert summary["training"] == {"loss": 0.5} and summary["validation"] == {"loss": 0.5}
    assert "closed at step 1" in out.stdout  # the script's output, on the console
    said = " ".join(out.stderr.split())
    assert "the script exited 0 after 1 training report, 1 validation report and " in said, said

    failing = _config(tmp_path, script_dir, hparams={"exit_code": 4})
    out = run_det(["e", "create", failing, script_dir, "--local", "--test",
                   "--local-dir", tmp_path / "local"])
    assert out.returncode != 0
    assert "exited with code 4" in out.stdout + out.stderr


def test_bad_entrypoints_are_named(tmp_path, script_dir):
    for entrypoint, expected in (("python3 missing.py", "has no file 'missing.py'"),
                                 ("train.py", "its interpreter ('python3 train.py')")):
        out, _ = _create(tmp_path, _config(tmp_path, script_dir, entrypoint=entrypoint),
                         script_dir)
        assert out.returncode != 0
        assert "entrypoint" in out.stderr and expected in out.stderr, out.stderr


def test_adaptive_search_over_a_core_api_script(tmp_path):
    """tests/fixtures/core_api/train.py (a ``determined.core`` script) under adaptive_asha
    on one slot: a trial waiting for its rung gives its slot up and resumes later."""
    core_dir = FIXTURES / "core_api"
    config = tmp_path / "core.yaml"
    config.write_text(yaml.safe_dump({
        "name": "core-asha",
        "entrypoint": ["python3", "train.py", "--checkpoint-every", "5"],
        "hyperparameters": {"lr": {"type": "log", "base": 10, "minval": -2, "maxval": -1}},
        "searcher": {"name": "adaptive_asha", "metric": "validation_loss", "max_trials": 3,
                     "max_length": {"batches": 20}, "divisor": 2, "max_rungs": 2},
        "max_restarts": 0,
    }))
    out, result = _create(tmp_path, config, core_dir)
    assert out.returncode == 0, out.stdout + out.stderr
    assert result["state"] == "COMPLETED" and len(result["trials"]) == 3
    assert all(t["state"] == "COMPLETED" and t["best_metric"] > 0 for t in result["trials"])
    assert max(t["batches"] for t in result["trials"]) == 20
    logs = {t["trial_id"]: _logs(tmp_path, t["trial_id"]) for t in result["trials"]}
    assert "done at step" in logs[result["trials"][0]["trial_id"]]
    # The first trial at rung 0 has no peers to beat yet: its script exits and the log
    # says it may resume (if promoted later), never that it surely will; its steps are
    # in the searcher's unit (batches here).
    assert ("Trial stopped after a checkpoint at 10 batches; it resumes only if the searcher"
            in logs[result["trials"][0]["trial_id"]])
    assert not any("it resumes later" in log for log in logs.values()), logs


LAGGING_SCRIPT = """
import json
import determined as det

info = det.get_cluster_info()
steps = 0
with det.core.init() as core:
    if info.latest_checkpoint:
        with core.checkpoint.restore_path(info.latest_checkpoint) as path:
            steps = json.loads((path / "state.json").read_text())["steps"]
        print("resumed at", steps, flush=True)
    for op in core.searcher.operations():
        while steps < op.length:
            steps += 1
            core.train.report_training_metrics(steps, {"loss": 1.0 / steps})
            if steps % 3 == 0:  # its own cadence, not the rungs'
                with core.checkpoint.store_path({"steps_completed": steps}) as (path, _):
                    (path / "state.json").write_text(json.dumps({"steps": steps}))
        val = info.trial.trial_id + 1.0 / steps  # the first trial is the best
        core.train.report_validation_metrics(steps, {"val": val})
        op.report_completed(val)
"""


def test_a_script_checkpointing_off_its_rungs_lets_the_search_go_on(tmp_path):
    """A script that checkpoints every 3 steps under ASHA with rungs at 4 and 8, on one
    slot. Waiting at rung 4 (checkpoint at 3), the first trial gave its slot to the
    next trial and exited; it was queued to train to 4 again and, being the oldest,
    took the slot back each time: the search went round forever. Now it waits without
    a process, resumes from its checkpoint when promoted, and stores each step once."""
    model = tmp_path / "lagging"
    model.mkdir()
    (model / "train.py").write_text(LAGGING_SCRIPT)
    config = tmp_path / "lagging.yaml"
    config.write_text(yaml.safe_dump({
        "name": "lagging", "entrypoint": "python3 train.py",
        "hyperparameters": {"x": {"type": "double", "minval": 0, "maxval": 1}},
        "searcher": {"name": "adaptive_asha", "metric": "val", "max_trials": 3,
                     "max_length": {"batches": 8}, "divisor": 2, "max_rungs": 2,
                     "mode": "aggressive"},
        "max_restarts": 0,
    }))
    out, result = _create(tmp_path, config, model)
    assert out.returncode == 0, out.stdout + out.stderr
    assert result["state"] == "COMPLETED"
    first = min(t["trial_id"] for t in result["trials"])
    log = _logs(tmp_path, first)
    assert log.count("Trial resumes") == 1, log
    assert ("Trial stopped at 4 batches, its latest checkpoint at 3 batches (the script "
            "stored none when it stopped); if the searcher asks for more it resumes from "
            "there") in log, log
    assert "resumed at 3" in log, log
    described = run_det(["t", "describe", first, "--local-dir", tmp_path / "local", "--json",
                         "--metrics"])
    assert described.returncode == 0, described.stderr
    steps = [m["total_batches"] for m in json.loads(described.stdout)["metrics"]
             if m["kind"] == "training"]
    assert steps == list(range(1, 9)), steps


def test_a_script_that_ends_on_its_own_completes(tmp_path):
    """Exit 0 without following (or even asking for) the searcher's operations."""
    model = tmp_path / "plain"
    model.mkdir()
    (model / "plain.py").write_text(
        "import json, os\nprint('plain script, lr', json.loads(os.environ['DET_HPARAMS'])['lr'])\n")
    config = tmp_path / "plain.yaml"
    config.write_text(yaml.safe_dump({
        "entrypoint": "python3 plain.py", "hyperparameters": {"lr": 0.25},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 5}}}))
    out, result = _create(tmp_path, config, model)
    assert out.returncode == 0, out.stdout + out.stderr
    (trial,) = result["trials"]
    assert trial["state"] == "COMPLETED" and trial["restarts"] == 0
    assert "plain script, lr 0.25" in _logs(tmp_path, trial["trial_id"])


def test_a_script_with_two_slots_starts_only_its_chief(tmp_path, script_dir):
    config = _config(tmp_path, script_dir, resources={"slots_per_trial": 2})
    out, result = _create(tmp_path, config, script_dir, "--slots", "2")
    assert out.returncode == 0, out.stdout + out.stderr
    (trial,) = result["trials"]
    assert trial["state"] == "COMPLETED"
    assert _logs(tmp_path, trial["trial_id"]).count("runs its script") == 1


NO_CHECKPOINT_SCRIPT = (FIXTURES / "core_no_checkpoint" / "train.py").read_text()


def test_test_mode_of_a_script_storing_no_checkpoint_says_how_to_store_one(tmp_path):
    """A determined.core loop that reports metrics and stores no checkpoint passes the
    test, and one line says that nothing was stored and how a script stores a checkpoint
    (a real run of it could never resume)."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "train.py").write_text(NO_CHECKPOINT_SCRIPT)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "name": "no-ckpt", "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 4}}}))
    out = run_det(["e", "create", config, model, "--local", "--test",
                   "--local-dir", tmp_path / "local"], env={"COLUMNS": "200"})
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [" ".join(line.split()) for line in out.stdout.splitlines() if line.strip()]
    done = next(i for i, line in enumerate(lines) if "Model definition test succeeded" in line)
    assert lines[done].endswith("1 training report, 1 validation report and 0 checkpoints"), lines
    assert lines[done + 1] == (
        "The script stored no checkpoint: store one with core.checkpoint.store_path or "
        "core.checkpoint.upload (a trial without one starts over after a pause or a "
        "failure)"), lines
    # One that stores a checkpoint gets no such line.
    (model / "train.py").write_text(STORING_SCRIPT)
    out = run_det(["e", "create", config, model, "--local", "--test",
                   "--local-dir", tmp_path / "local"], env={"COLUMNS": "200"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "and 1 checkpoint" in out.stdout and "stored no checkpoint" not in out.stdout, \
        out.stdout


STORING_SCRIPT = NO_CHECKPOINT_SCRIPT.replace(
    "        op.report_completed(0.5)",
    "        with core.checkpoint.store_path({'steps_completed': op.length}) as (path, _):\n"
    "            (path / 'done').write_text('x')\n"
    "        op.report_completed(0.5)")
