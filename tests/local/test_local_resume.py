"""``det experiment resume --local ID`` after the driver was SIGKILLed: the search ends
as the uninterrupted one did."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
import yaml

from det_cli_testing import run_det

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "master"))
from master_testing import slow_model_dir  # noqa: E402

pytestmark = pytest.mark.e2e

#: Seconds a batch takes. TinyTrial alone ends this search about a second after its
#: second checkpoint (most of its time is process starts): a test that stops it then
#: raced its end on a loaded machine. Slowed, the trials run one after the other have
#: some 120 batches (6 s) to go then.
BATCH_SECONDS = 0.05


@pytest.fixture
def model_dir(tiny_dir, tmp_path) -> pathlib.Path:
    """tests/fixtures/tiny_pytorch with ``slow_def:SlowTrial`` (BATCH_SECONDS a batch)."""
    return pathlib.Path(slow_model_dir(tiny_dir, tmp_path))


def _config(tmp_path, model_dir):
    with open(model_dir / "const.yaml") as f:
        cfg = yaml.safe_load(f)
    cfg["entrypoint"] = "slow_def:SlowTrial"
    cfg["hyperparameters"]["sleep"] = BATCH_SECONDS
    cfg["hyperparameters"]["lr"] = {"type": "double", "minval": 0.01, "maxval": 0.3}
    cfg["searcher"] = {"name": "adaptive_asha", "metric": "validation_loss", "max_trials": 3,
                       "max_length": {"batches": 80}, "divisor": 2, "max_rungs": 2}
    cfg["min_validation_period"] = {"batches": 20}
    cfg["reproducibility"] = {"experiment_seed": 11}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _read(local_dir, *args):
    out = run_det([*args, "--local-dir", local_dir, "--json"])
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _validations(local_dir, exp_id=1):
    """(trial, batches) -> validation_loss of every stored validation, read by `det e
    describe --local-dir DIR --json --metrics`; each workload stored once."""
    rows = {}
    (exp,) = _read(local_dir, "e", "describe", str(exp_id), "--metrics")
    for trial in exp["trials"]:
        for m in trial["metrics"]:
            key = (trial["id"], m["kind"], m["total_batches"])
            assert key not in rows, f"workload stored twice: {key}"
            rows[key] = m["metrics"].get("validation_loss")
    return {(k[0], k[2]): v for k, v in rows.items() if k[1] == "validation"}


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_resume_after_interrupt_matches_uninterrupted_run(tmp_path, model_dir, sig):
    """kill -9 of the driver and its trials, or Ctrl-C (trials checkpoint first)."""
    config = _config(tmp_path, model_dir)
    whole = run_det(["e", "create", config, model_dir, "--local-dir", tmp_path / "a",
                     "--json", "--no-progress"], timeout=400)
    assert whole.returncode == 0, whole.stderr
    expected = json.loads(whole.stdout)

    local = tmp_path / "b"
    proc = subprocess.Popen(
        [sys.executable, "-m", "determined.cli", "e", "create", str(config), str(model_dir),
         "--local-dir", str(local), "--json", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    ckpts = local / "checkpoints"
    deadline = time.monotonic() + 300
    while not (ckpts.exists() and len([p for p in ckpts.iterdir()
                                       if not p.name.startswith(".")]) >= 2):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no checkpoint to resume from"
        time.sleep(0.2)
    os.killpg(proc.pid, sig)
    proc.wait(timeout=180)
    (state,) = _read(local, "e", "describe", "1")
    assert state["state"] == ("PAUSED" if sig == signal.SIGINT else "ACTIVE"), state["state"]

    out = run_det(["e", "resume", "1", "--local-dir", local, "--json", "--no-progress"],
                  timeout=400)
    assert out.returncode == 0, out.stdout + out.stderr
    resumed = json.loads(out.stdout)
    assert resumed["state"] == "COMPLETED"
    strip = lambda r: [(t["hparams"], t["batches"], t["state"], t["best_metric"])  # noqa: E731
                       for t in r["trials"]]
    assert strip(resumed) == strip(expected)
    assert sorted(_validations(local).values()) == \
        sorted(_validations(tmp_path / "a").values())
    again = run_det(["e", "resume", "1", "--local-dir", local])
    assert again.returncode != 0 and "it has ended (COMPLETED)" in again.stdout + again.stderr


def test_resumed_progress_counts_the_trials_done_before(tmp_path, model_dir):
    """The status line of a resumed search counts every ended trial, not only those that
    ended after the resume ("0 running, 1 done" closed a search of 6 trials)."""
    import sqlite3

    config = _config(tmp_path, model_dir)
    cfg = yaml.safe_load(config.read_text())
    cfg["searcher"]["max_trials"] = 6
    config.write_text(yaml.safe_dump(cfg))
    local = tmp_path / "local"
    proc = subprocess.Popen(
        [sys.executable, "-m", "determined.cli", "e", "create", str(config), str(model_dir),
         "--local-dir", str(local), "--no-progress"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def ended() -> int:
        try:
            with sqlite3.connect(local / "local.db") as db:
                return db.execute("SELECT COUNT(*) FROM trials WHERE state IN "
                                  "('COMPLETED', 'CANCELED', 'ERROR')").fetchone()[0]
        except sqlite3.Error:
            return 0

    deadline = time.monotonic() + 300
    while ended() < 1:
        assert proc.poll() is None, "the search ended before it could be interrupted"
        assert time.monotonic() < deadline, "no trial ended"
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=180)
    before = ended()
    assert before < 6

    out = run_det(["e", "resume", "1", "--local-dir", local], timeout=400,
                  env={"COLUMNS": "200"})
    assert out.returncode == 0, out.stdout + out.stderr
    status = [line for line in out.stdout.splitlines() if line.startswith("search ")]
    assert status and "0 running, 6 done" in status[-1], out.stdout


def test_resuming_an_ended_experiment_says_it_cannot(tmp_path, tiny_dir):
    local = tmp_path / "local"
    out = run_det(["e", "create", tiny_dir / "const.yaml", tiny_dir, "--local-dir", local,
                   "--no-progress"])
    assert out.returncode == 0, out.stderr
    out = run_det(["e", "resume", "1", "--local-dir", local])
    assert out.returncode == 1
    assert ("local experiment 1 cannot be resumed: it has ended (COMPLETED)"
            in out.stderr), out.stderr



def test_resuming_one_killed_before_its_first_snapshot_says_so(tmp_path, tiny_dir):
    """An experiment whose driver died before it saved a snapshot (its record ACTIVE,
    no snapshot row) was said to have "run with an older version"."""
    import sqlite3

    local = tmp_path / "local"
    out = run_det(["e", "create", tiny_dir / "const.yaml", tiny_dir, "--local-dir", local,
                   "--no-progress"])
    assert out.returncode == 0, out.stderr
    with sqlite3.connect(local / "local.db") as db:  # as a driver killed at its start
        db.execute("UPDATE experiments SET state = 'ACTIVE' WHERE id = 1")
        db.execute("DELETE FROM searcher_snapshots WHERE experiment_id = 1")
    out = run_det(["e", "resume", "1", "--local-dir", local])
    assert out.returncode == 1
    assert ("local experiment 1 cannot be resumed: it stopped before it saved its first "
            "snapshot (or an older version ran it); run it again with `det experiment "
            "create`") in out.stderr, out.stderr

PID_SCRIPT = """
import os, pathlib, time
import determined as det

marks = pathlib.Path(det.get_cluster_info().trial.hparams["marks"])
with det.core.init() as core:
    for op in core.searcher.operations():
        for step in range(1, op.length + 1):
            time.sleep(0.1)
            core.train.report_training_metrics(step, {"pid": os.getpid()})
            (marks / "steps").write_text(str(step))
        with core.checkpoint.store_path({"steps_completed": op.length}) as (path, _):
            (path / "done").write_text("x")
        core.train.report_validation_metrics(op.length, {"val": 1.0})
        op.report_completed(1.0)
"""


def test_a_run_killed_before_its_first_checkpoint_leaves_no_metrics(tmp_path):
    """kill -9 of the driver while a script trial trains toward its first checkpoint: the
    resumed trial starts over and every metric it has is its own (they were the killed
    run's up to where that one got). Its log says "Trial starts" once: the snapshot
    had it waiting to start, and the resumed run said it started again."""
    import sqlite3

    model = tmp_path / "pids"
    model.mkdir()
    (model / "train.py").write_text(PID_SCRIPT)
    marks = tmp_path / "marks"
    marks.mkdir()
    config = tmp_path / "pids.yaml"
    config.write_text(yaml.safe_dump({
        "name": "pids", "entrypoint": "python3 train.py",
        "hyperparameters": {"marks": str(marks)},
        "searcher": {"name": "single", "metric": "val", "max_length": {"batches": 40}},
        "max_restarts": 0}))
    local = tmp_path / "local"
    proc = subprocess.Popen(
        [sys.executable, "-m", "determined.cli", "e", "create", str(config), str(model),
         "--local-dir", str(local), "--no-progress"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while not ((marks / "steps").exists() and int((marks / "steps").read_text() or 0) >= 8):
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "the script did not train"
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)

    def pids():
        with sqlite3.connect(local / "local.db") as db:
            rows = db.execute("SELECT metrics FROM metrics WHERE kind = 'training'").fetchall()
        return [json.loads(m)["pid"] for (m,) in rows]

    killed = set(pids())
    assert killed, "the killed run stored no metrics: nothing to check"
    out = run_det(["e", "resume", "1", "--local-dir", local, "--no-progress"], timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    after = pids()
    assert len(after) == 40
    assert not killed & set(after), after
    logs = run_det(["t", "logs", "1", "--local-dir", local])
    assert logs.returncode == 0, logs.stderr
    said = [line.split("[determined] ", 1)[1] for line in logs.stdout.splitlines()
            if "[determined] Trial " in line]
    assert [line for line in said if line.startswith("Trial starts")] == ["Trial starts"], said
    lost = said.index("Trial process lost (driver or master restarted); it resumes at 0 batches")
    assert said[lost + 1] == "Trial resumes", said
