"""The Core API off the platform (directory mode): real script processes, real files."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from determined import core
from determined.core import read_records
from tests.core.core_testing import (
    SCRIPT,
    assert_same_weights,
    final_state,
    run_script,
    script_env,
)

pytestmark = pytest.mark.timeout(600)


def test_script_by_hand_writes_metrics_and_checkpoints(tmp_path):
    out = tmp_path / "run"
    done = run_script(out, ["--steps", "12", "--checkpoint-every", "5"])
    assert done.returncode == 0, done.stderr
    assert "done at step 12" in done.stdout
    records = read_records(str(out))
    training = [(r["steps_completed"], r["metrics"]) for r in records if r["kind"] == "training"]
    assert [s for s, _ in training] == [5, 10, 12]
    assert all(set(m) == {"loss"} and m["loss"] > 0 for _, m in training)
    validation = [r for r in records if r["kind"] == "validation"]
    assert [(v["steps_completed"], list(v["metrics"])) for v in validation] == [
        (12, ["validation_loss"])]
    checkpoints = [r for r in records if r["kind"] == "checkpoint"]
    assert [c["steps_completed"] for c in checkpoints] == [5, 10, 12]
    for c in checkpoints:
        path = out / "checkpoints" / c["storage_id"]
        assert c["path"] == str(path)
        assert sorted(os.listdir(path)) == ["metadata.json", "state.pt"]
        meta = json.loads((path / "metadata.json").read_text())
        assert meta["steps_completed"] == meta["batch_number"] == c["steps_completed"]
        assert meta["uuid"] == c["storage_id"]
    assert core.latest_local_checkpoint(str(out)) == checkpoints[-1]["storage_id"]


def test_sigkilled_script_resumes_to_identical_weights(tmp_path):
    """Killed between checkpoints and restarted by hand, the script ends with the same
    weights, optimizer and RNG state as a run never interrupted."""
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    args = ["--steps", "40", "--checkpoint-every", "7"]
    done = run_script(straight, args)
    assert done.returncode == 0, done.stderr

    # Slow enough that it is still short of step 40 (> 6 s) when the loop below sees step
    # 15 and kills it, even on a loaded machine.
    proc = subprocess.Popen([sys.executable, str(SCRIPT), *args, "--step-delay", "0.25"],
                            env=script_env(killed), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 240
        while True:  # until it trained past a checkpoint (and is not done)
            records = read_records(str(killed))
            ckpts = [r["steps_completed"] for r in records if r["kind"] == "checkpoint"]
            trained = [r["steps_completed"] for r in records if r["kind"] == "training"]
            if ckpts and ckpts[-1] >= 14 and trained and trained[-1] > ckpts[-1]:
                break
            assert proc.poll() is None, proc.stdout.read().decode()
            assert time.monotonic() < deadline, "the script made no progress"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    killed_at = final_state(killed)["steps"]
    assert 14 <= killed_at < 40

    resumed = run_script(killed, args)
    assert resumed.returncode == 0, resumed.stderr
    assert f"at step {killed_at}" in resumed.stdout
    assert "done at step 40" in resumed.stdout
    assert_same_weights(final_state(straight), final_state(killed))


def test_checkpoint_api_in_directory_mode(tmp_path, monkeypatch):
    """store_path/upload/download/restore_path/get_metadata/delete against a
    checkpoint_storage directory given to core.init."""
    monkeypatch.setenv("DET_CORE_DIR", str(tmp_path / "core"))
    monkeypatch.delenv("DET_CLUSTER_INFO", raising=False)
    storage_dir = tmp_path / "ckpts"
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "a.bin").write_bytes(b"\x00\x01")
    (src / "b.txt").write_text("b")
    with core.init(checkpoint_storage=str(storage_dir)) as ctx:
        assert ctx.info is None and ctx.distributed.size == 1
        with ctx.checkpoint.store_path({"steps_completed": 3, "note": "x"}) as (path, sid):
            assert not (storage_dir / sid).exists()  # published only on exit
            (path / "w.txt").write_text("weights")
        assert (storage_dir / sid / "w.txt").read_text() == "weights"
        meta = ctx.checkpoint.get_metadata(sid)
        assert meta["note"] == "x" and meta["steps_completed"] == 3
        up = ctx.checkpoint.upload(src, {"steps_completed": 4})
        dest = tmp_path / "dest"
        ctx.checkpoint.download(up, dest, selector=lambda name: name.endswith(".bin"))
        assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) \
            == ["sub/a.bin"]
        with ctx.checkpoint.restore_path(up) as path:
            assert (path / "b.txt").read_text() == "b"
        ctx.checkpoint.delete(sid)
        assert not (storage_dir / sid).exists()
        with pytest.raises(ValueError, match="storage_id"):
            ctx.checkpoint.delete("../x")
        # A failing block publishes nothing.
        with pytest.raises(RuntimeError):
            with ctx.checkpoint.store_path({"steps_completed": 5}) as (path, bad):
                (path / "half").write_text("")
                raise RuntimeError("disk full")
        assert not (storage_dir / bad).exists()
    kinds = [r["kind"] for r in read_records(str(tmp_path / "core"))]
    assert kinds == ["checkpoint", "checkpoint"]


def test_bad_reports_name_what_was_expected(tmp_path, monkeypatch):
    monkeypatch.setenv("DET_CORE_DIR", str(tmp_path / "core"))
    monkeypatch.delenv("DET_CLUSTER_INFO", raising=False)
    with core.init() as ctx:
        with pytest.raises(ValueError, match="steps_completed"):
            ctx.train.report_training_metrics(-1, {"loss": 1.0})
        with pytest.raises(ValueError, match="steps_completed"):
            ctx.train.report_training_metrics(1.5, {"loss": 1.0})
        # Beyond what the hosts store (a signed 64-bit integer): refused at the call.
        with pytest.raises(ValueError, match=r"report_training_metrics steps_completed in"):
            ctx.train.report_training_metrics(2**63, {"loss": 1.0})
        with pytest.raises(TypeError, match="metrics"):
            ctx.train.report_training_metrics(1, [("loss", 1.0)])
        with pytest.raises(ValueError, match="'acc' is None"):
            ctx.train.report_validation_metrics(1, {"acc": None})
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            ctx.train.report_progress(1.5)
        with pytest.raises(ValueError, match="group"):
            ctx.train.report_metrics("test", 1, {"x": 1})
    assert read_records(str(tmp_path / "core")) == []
