"""``det`` commands against a real master: create --test / --follow-first-trial, describe,
config, list-trials, list-checkpoints, download-model-def, trial describe/logs/download,
agent/slot list, version; their --csv / --json outputs parsed back; bad arguments."""

import csv
import io
import json
import os
import pathlib
import shutil
import tarfile

import httpx
import pytest
import yaml

from det_cli_testing import run_det

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures"


def det(master, *args, code=0, timeout=180):
    out = run_det(["-m", master.url, *args], timeout=timeout)
    assert out.returncode == code, f"{args}: {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def csv_sections(text):
    """CSV tables separated by blank lines -> lists of dict rows."""
    return [list(csv.DictReader(io.StringIO(block))) for block in text.strip().split("\n\n")]


def write_config(tmp_path, tiny_dir, name="c.yaml", **changes):
    cfg = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    cfg.update(changes)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def finished(shared_master, tmp_path_factory):
    """Two completed experiments: one created with -f (follow), one waited on with `e wait`."""
    tiny_dir = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "tiny_pytorch"
    tmp = tmp_path_factory.mktemp("cfg")
    config = write_config(tmp, tiny_dir, searcher={"name": "single", "metric": "validation_loss",
                                                   "max_length": {"batches": 20}})
    followed = det(shared_master, "e", "create", config, tiny_dir, "-f")
    first = int(followed.stdout.split("Created experiment ")[1].split()[0])
    created = det(shared_master, "e", "create", config, tiny_dir, "--json")
    second = json.loads(created.stdout)["id"]
    waited = det(shared_master, "e", "wait", second, "--polling-interval", "0.3")
    return {"ids": (first, second), "followed": followed, "waited": waited}


def test_follow_of_a_failed_experiment_names_the_failed_trial(shared_master, tmp_path):
    """An ERROR experiment's last line said only "Experiment N ERROR": it names the
    failed trial, the command that shows its log, and why it failed (its exception)."""
    tiny_dir = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "tiny_pytorch"
    cfg = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    cfg["hyperparameters"]["fail_at_batch"] = 3
    cfg["max_restarts"] = 0
    config = tmp_path / "fails.yaml"
    config.write_text(yaml.safe_dump(cfg))
    out = det(shared_master, "e", "create", config, tiny_dir, "-f", code=1)
    exp_id = int(out.stdout.split("Created experiment ")[1].split()[0])
    (trial,) = json.loads(det(shared_master, "e", "describe", exp_id, "--json").stdout)[0][
        "trials"]
    lines = out.stderr.strip().splitlines()
    end = lines.index(f"Experiment {exp_id} ERROR")
    assert lines[end + 1] == (f"1 trial failed: {trial['id']}; its log: "
                              f"`det trial logs {trial['id']}`"), lines
    assert lines[end + 2].startswith(f"Trial {trial['id']} failed (exit code "), lines
    assert lines[-1] == "ValueError: planned failure at batch 3", lines
    assert "planned failure at batch 3" in det(shared_master, "t", "logs", trial["id"]).stdout


def test_follow_shows_progress_logs_and_best_metric(shared_master, finished):
    first, second = finished["ids"]
    out = finished["followed"]
    assert "exited: completed" in out.stdout  # the first trial's logs, on stdout
    status = [line for line in out.stderr.splitlines() if line.startswith(f"Experiment {first}")]
    assert status[-1].startswith(f"Experiment {first} COMPLETED: best validation_loss")
    # The checkpoint line names its trial (it read "Its latest checkpoint", after the
    # experiment's line, as if the experiment's).
    (trial,) = json.loads(det(shared_master, "e", "describe", first, "--json").stdout)[0][
        "trials"]
    assert (f"Trial {trial['id']}'s latest checkpoint: {trial['latest_checkpoint']}"
            in out.stderr.splitlines()), out.stderr
    assert any("trials: 0 running, 1 completed | batches: 20" in line for line in status)
    assert finished["waited"].stdout.strip() == f"Experiment {second}: COMPLETED"


def test_experiment_describe_outputs(shared_master, finished, tmp_path):
    first, second = finished["ids"]
    (exp,) = json.loads(det(shared_master, "e", "describe", first, "--json").stdout)
    assert exp["id"] == first and exp["state"] == "COMPLETED"
    (trial,) = exp["trials"]
    assert [w["batches"] for w in trial["workloads"]] == [20, 10]  # newest first
    assert trial["workloads"][0]["checkpoint_state"] == "COMPLETED"
    assert trial["workloads"][0]["validation"] == trial["best_validation"]

    both = json.loads(det(shared_master, "e", "describe", f"{first},{second}", "--json").stdout)
    assert [e["id"] for e in both] == [first, second]

    exps, trials, workloads = csv_sections(
        det(shared_master, "e", "describe", f"{first},{second}", "--metrics", "--csv").stdout)
    assert [int(r["id"]) for r in exps] == [first, second]
    assert {r["state"] for r in trials} == {"COMPLETED"} and len(trials) == 2
    assert len(workloads) == 4 and "training.loss" in workloads[0]
    assert [int(w["batches"]) for w in workloads] == [20, 10, 20, 10]  # each trial's newest first
    assert float(workloads[0]["validation.validation_loss"]) == float(workloads[0]["validation"])

    out = det(shared_master, "e", "describe", first, "--outdir", tmp_path / "d").stdout.split()
    assert sorted(os.path.basename(p) for p in out) == ["experiments.csv", "trials.csv",
                                                        "workloads.csv"]
    with open(tmp_path / "d" / "workloads.csv") as f:
        rows = list(csv.DictReader(f))
    assert "training.loss" not in rows[0] and rows[0]["checkpoint_uuid"]

    text = det(shared_master, "e", "describe", first).stdout
    assert "Workloads" in text and "COMPLETED" in text


def test_experiment_config_trials_checkpoints_model_def(shared_master, finished, tmp_path, tiny_dir):
    first, _ = finished["ids"]
    config = yaml.safe_load(det(shared_master, "e", "config", first).stdout)
    assert config["searcher"]["max_length"] == {"batches": 20}
    assert json.loads(det(shared_master, "e", "config", first, "--json").stdout) == config

    (trial,) = json.loads(det(shared_master, "e", "lt", first, "--json").stdout)
    rows = list(csv.DictReader(io.StringIO(
        det(shared_master, "e", "list-trials", first, "--csv").stdout)))
    assert [int(r["trial_id"]) for r in rows] == [trial["id"]] and rows[0]["total_batches"] == "20"

    all_ckpts = json.loads(det(shared_master, "e", "lc", first, "--json").stdout)
    assert [c["batches"] for c in all_ckpts] == [20]
    (best,) = json.loads(det(shared_master, "e", "lc", first, "--best", "1", "--json").stdout)
    assert best["state"] == "COMPLETED" and best["uuid"] == trial["latest_checkpoint"]
    rows = list(csv.DictReader(io.StringIO(
        det(shared_master, "e", "list-checkpoints", first, "--best", "1", "--csv").stdout)))
    assert rows[0]["uuid"] == best["uuid"] and float(rows[0]["validation_loss"]) == pytest.approx(
        trial["best_validation"])

    path = det(shared_master, "e", "download-model-def", first, "--output-dir", tmp_path).stdout.strip()
    assert path == str(tmp_path / f"experiment_{first}_model_def.tgz")
    with tarfile.open(path) as tar:
        assert "model_def.py" in tar.getnames()
        data = tar.extractfile("model_def.py").read()
    assert data == (tiny_dir / "model_def.py").read_bytes()


def test_trial_describe_logs_download(shared_master, finished, tmp_path):
    first, _ = finished["ids"]
    (trial,) = json.loads(det(shared_master, "e", "lt", first, "--json").stdout)
    tid = trial["id"]
    t = json.loads(det(shared_master, "t", "describe", tid, "--metrics", "--json").stdout)
    assert t["id"] == tid and [m["kind"] for m in t["metrics"]].count("validation") == 1
    assert t["workloads"][0]["validation.accuracy"] > 0
    trial_rows, workloads = csv_sections(det(shared_master, "t", "describe", tid, "--csv").stdout)
    assert int(trial_rows[0]["trial_id"]) == tid and [w["batches"] for w in workloads] == ["20", "10"]
    # One checkpoint: the best and the latest, each named on its line; JSON and CSV too.
    assert t["best_checkpoint"] == t["latest_checkpoint"] == trial["latest_checkpoint"]
    assert trial_rows[0]["best_checkpoint"] == trial["latest_checkpoint"]
    assert "training.loss" not in workloads[0]
    text = det(shared_master, "t", "describe", tid).stdout.splitlines()
    # The searcher metric's column is named after it (piped: every column, in full).
    assert text[text.index("Workloads") + 1].split(" | ")[-1].strip() == "validation_loss", text
    assert any(line.startswith(f"Best checkpoint (lowest validation_loss): "
                               f"{trial['latest_checkpoint']}, 20 batches, validation_loss ")
               for line in text), text
    assert f"Latest checkpoint: {trial['latest_checkpoint']}, 20 batches" in text, text

    logs = det(shared_master, "t", "logs", tid).stdout.splitlines()
    assert det(shared_master, "t", "logs", tid, "--tail", "1").stdout.splitlines() == logs[-1:]
    assert det(shared_master, "t", "logs", tid, "--head", "1").stdout.splitlines() == logs[:1]

    latest = det(shared_master, "t", "download", tid, "--latest", "-o", tmp_path / "l").stdout
    assert f"Local checkpoint path: {tmp_path / 'l'}" in latest and trial["latest_checkpoint"] in latest
    assert os.path.exists(tmp_path / "l" / "state_dict.pth")
    path = det(shared_master, "t", "download", tid, "--best", "--sort-by", "accuracy",
               "--smaller-is-better", "false", "-q", "-o", tmp_path / "b").stdout.strip()
    assert path == str(tmp_path / "b") and os.path.exists(tmp_path / "b" / "metadata.json")
    path = det(shared_master, "t", "download", tid, "--uuid", trial["latest_checkpoint"], "-q",
               "-o", tmp_path / "u").stdout.strip()
    assert os.path.exists(os.path.join(path, "state_dict.pth"))


def test_list_archive_and_cluster_views(shared_master, finished):
    first, second = finished["ids"]
    listed = json.loads(det(shared_master, "e", "list", "--json").stdout)
    assert {first, second} <= {e["id"] for e in listed}
    det(shared_master, "e", "archive", second)
    rows = list(csv.DictReader(io.StringIO(det(shared_master, "e", "list", "--csv").stdout)))
    assert second not in {int(r["id"]) for r in rows} and first in {int(r["id"]) for r in rows}
    rows = list(csv.DictReader(io.StringIO(det(shared_master, "e", "list", "-a", "--csv").stdout)))
    assert {r["id"]: r["archived"] for r in rows}[str(second)] == "True"
    assert "(archived)" not in det(shared_master, "e", "unarchive", second).stdout
    assert second in {e["id"] for e in json.loads(det(shared_master, "e", "list", "--json").stdout)}

    (agent,) = list(csv.DictReader(io.StringIO(det(shared_master, "agent", "list", "--csv").stdout)))
    assert agent["id"] == "embedded" and agent["slots"] == "2"
    slots = json.loads(det(shared_master, "s", "list", "--json").stdout)
    assert [s["slot_id"] for s in slots] == [0, 1]
    version = det(shared_master, "version").stdout
    assert "client: det 0.13.0" in version and f"master: 0.13.0 at {shared_master.url}" in version
    cluster_id = httpx.get(shared_master.url + "/api/v1/master").json()["cluster_id"]
    assert f"\ncluster: {cluster_id}\n" in version, version  # its own line: within 80 columns
    assert all(len(line) <= 80 for line in version.splitlines()), version


def test_create_test_mode_passes_and_is_archived(shared_master, tiny_dir):
    out = det(shared_master, "e", "create", tiny_dir / "const.yaml", tiny_dir, "--test")
    exp_id = int(out.stdout.split("Created test-mode experiment ")[1].split()[0])
    assert "Model definition test succeeded" in out.stdout and "exited: completed" in out.stdout
    assert "validated and checkpointed (now archived)" in " ".join(out.stdout.split())
    (exp,) = json.loads(det(shared_master, "e", "describe", exp_id, "--json").stdout)
    assert exp["archived"] and exp["state"] == "COMPLETED"
    cfg = exp["config"]
    assert cfg["searcher"]["name"] == "single" and cfg["searcher"]["max_length"] == {"batches": 1}
    assert cfg["scheduling_unit"] == 1 and cfg["min_validation_period"] == {"batches": 1}
    assert cfg["max_restarts"] == 0 and cfg["description"].startswith("[test-mode] ")
    assert all(cfg["checkpoint_storage"][k] == 0
               for k in ("save_experiment_best", "save_trial_best", "save_trial_latest"))
    (trial,) = exp["trials"]
    assert trial["total_batches"] == 1 and [w["batches"] for w in trial["workloads"]] == [1]
    # -t is the short form, --json the machine-readable result.
    out = det(shared_master, "e", "create", tiny_dir / "const.yaml", tiny_dir, "-t", "--json")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["passed"] and result["state"] == "COMPLETED"


def test_create_test_mode_of_a_script_storing_no_checkpoint_says_so(shared_master, tmp_path):
    """A script's test run on a master that stored no checkpoint passes, and does not
    claim it checkpointed: one line says how a script stores one (as --local says)."""
    model = tmp_path / "model"
    model.mkdir()
    shutil.copy(FIXTURES / "core_no_checkpoint" / "train.py", model / "train.py")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 4}}}))
    out = det(shared_master, "e", "create", config, model, "--test")
    said = " ".join(out.stdout.split())
    assert "Model definition test succeeded" in said, out.stdout
    assert "checkpointed" not in said, out.stdout
    assert ("The script stored no checkpoint: store one with core.checkpoint.store_path or "
            "core.checkpoint.upload") in said, out.stdout


def test_create_test_mode_fails_when_the_trial_raises(shared_master, tiny_dir, tmp_path):
    config = write_config(tmp_path, tiny_dir, hyperparameters={
        "global_batch_size": 16, "lr": 0.1, "dropout": 0.2, "fail_at_batch": 0})
    out = det(shared_master, "e", "create", config, tiny_dir, "--test-mode", code=1)
    exp_id = int(out.stdout.split("Created test-mode experiment ")[1].split()[0])
    assert "planned failure at batch 0" in out.stdout  # the trial's traceback, streamed
    assert f"Model definition test failed: test-mode experiment {exp_id} ended ERROR" in out.stderr
    (exp,) = json.loads(det(shared_master, "e", "describe", exp_id, "--json").stdout)
    assert exp["archived"] and exp["trials"][0]["state"] == "ERROR"


def test_create_test_mode_names_the_searcher_metric_the_trial_lacks(shared_master, tiny_dir,
                                                                     tmp_path):
    """The trial's error on the master is worded as a local test's (one function words
    both): the metric the config names, what the trial reported, what to do."""
    config = write_config(tmp_path, tiny_dir, searcher={
        "name": "single", "metric": "nope", "max_length": {"batches": 40}})
    out = det(shared_master, "e", "create", config, tiny_dir, "--test", code=1)
    said = ("the validation metrics of TinyTrial lack the searcher metric 'nope' (received: "
            "accuracy, validation_loss); return it from evaluate_batch/evaluate_full_dataset "
            "or change searcher.metric")
    assert said in out.stdout, out.stdout + out.stderr  # the trial's log, streamed
    local = det(shared_master, "e", "create", config, tiny_dir, "--local", "--test",
                "--local-dir", tmp_path / "local", code=1)
    assert f"Model definition test failed: {said}" in local.stderr, local.stderr


def test_bad_arguments_get_clear_errors(shared_master, tiny_dir, tmp_path):
    for args in (("e", "describe", "999"), ("e", "config", "999"), ("e", "lt", "999"),
                 ("e", "lc", "999"), ("e", "download-model-def", "999"),
                 ("t", "describe", "999"), ("t", "logs", "999"),
                 ("t", "download", "999", "--latest")):
        out = det(shared_master, *args, code=1)
        assert "999 not found" in out.stderr, (args, out.stderr)
    for args, text in (
            (("e", "describe", "1,x"), "Expected comma-separated experiment ids"),
            (("e", "describe", "1", "--csv", "--json"), "not allowed with"),
            (("e", "lc", "1", "--best", "0"), "argument --best: Expected a whole number of at least 1"),
            (("e", "lt", "-1"), "argument experiment_id: Expected a whole number of at least 1"),
            (("checkpoint", "list", "0"), "argument experiment_id: Expected a whole number of at least 1"),
            (("t", "logs", "1", "--tail", "-3"), "argument --tail: Expected a whole number of at least 0"),
            (("slot", "disable", "embedded", "-1"), "argument slot_id: Expected a whole number of at least 0"),
            (("e", "create", tiny_dir / "const.yaml", tiny_dir, "--slots", "0"),
             "argument --slots: Expected a whole number of at least 1"),
            (("t", "download", "1"), "one of the arguments --best --latest --uuid is required"),
            (("t", "download", "1", "--latest", "--sort-by", "x"), "apply only with --best"),
            (("t", "download", "1", "--best", "--smaller-is-better", "maybe"), "Expected true or false"),
            (("t", "logs", "1", "--head", "1", "--tail", "1"), "not allowed with"),
            (("e", "wait", "1", "--polling-interval", "0"),
             "argument --polling-interval: Expected a number greater than 0"),
            (("e", "create", tiny_dir / "const.yaml", tiny_dir, "--test", "--paused"),
             "--paused cannot be combined with --test-mode")):
        out = run_det(["-m", shared_master.url, *args])
        assert out.returncode in (1, 2), (args, out.returncode)
        assert text is None or text in out.stderr, (args, out.stderr)
    out = det(shared_master, "e", "create", tmp_path / "none.yaml", tiny_dir, code=1)
    assert "none.yaml does not exist" in out.stderr
    out = det(shared_master, "e", "create", tiny_dir / "const.yaml", tmp_path / "nodir", "--test",
              code=1)
    assert "nodir" in out.stderr and "not a directory" in out.stderr
    out = det(shared_master, "e", "create", tiny_dir / "const.yaml", tiny_dir, "--template", "t",
              code=1)
    assert "--template t" in out.stderr


def test_download_of_an_experiment_without_checkpoints_says_so(shared_master, tiny_dir,
                                                               tmp_path):
    """`det e download` of an experiment that never checkpointed printed nothing and
    exited 0; it names the experiment and exits 1."""
    out = det(shared_master, "e", "create", tiny_dir / "const.yaml", tiny_dir, "--paused")
    exp_id = int(out.stdout.split()[-1])
    out = det(shared_master, "e", "download", exp_id, "-o", tmp_path / "best", code=1)
    assert out.stderr.strip() == f"det: error: experiment {exp_id} has no validated checkpoint"
    assert not (tmp_path / "best").exists()
    det(shared_master, "e", "kill", exp_id)


def test_download_of_a_checkpoint_whose_files_are_gone(shared_master, finished, tmp_path):
    """Files removed behind the master's back: the error said "checkpoint X: checkpoint X
    not found in DIR"; it says so once and what the record claims."""
    exp_id = finished["ids"][0]
    rows = json.loads(det(shared_master, "e", "lc", exp_id, "--json").stdout)
    uuid = next(r["uuid"] for r in rows if r["state"] == "COMPLETED")
    path = json.loads(det(shared_master, "checkpoint", "describe", uuid, "--json").stdout)["path"]
    moved = tmp_path / "moved"
    os.rename(path, moved)
    try:
        out = det(shared_master, "checkpoint", "download", uuid, "-o", tmp_path / "dl", code=1)
    finally:
        os.rename(moved, path)
    assert out.stderr.strip() == (
        f"det: error: checkpoint {uuid} not found in {os.path.dirname(path)} (it is recorded "
        "as COMPLETED: were its files removed outside Determined?) (HTTP 404)"), out.stderr
