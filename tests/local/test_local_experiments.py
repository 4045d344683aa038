"""``det experiment create ... --local``: whole experiments, real trial processes."""

import json
import os

import yaml

from det_cli_testing import run_det


def write_config(tmp_path, base_dir, **changes):
    with open(base_dir / "const.yaml") as f:
        cfg = yaml.safe_load(f)
    for key, value in changes.items():
        if value is None:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def create(tmp_path, config, model_dir, *extra, timeout=300):
    out = run_det(["experiment", "create", config, model_dir, "--local", "--local-dir",
                   tmp_path / "local", "--json", *extra], timeout=timeout)
    result = json.loads(out.stdout) if out.stdout.strip().startswith("{") else None
    return out, result


def read(tmp_path, *args):
    """A real ``det ... --local-dir DIR --json`` read command's JSON."""
    out = run_det([*args, "--local-dir", tmp_path / "local", "--json"])
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def workloads(tmp_path, trial_id):
    """(kind, batches) of every stored workload of the trial, as `det t describe` shows."""
    trial = read(tmp_path, "t", "describe", str(trial_id), "--metrics")
    return [(m["kind"], m["total_batches"]) for m in trial["metrics"]]


def test_single_experiment_completes_with_records(tmp_path, tiny_dir):
    out, result = create(tmp_path, tiny_dir / "const.yaml", tiny_dir)
    assert out.returncode == 0, out.stderr
    assert result["state"] == "COMPLETED"
    (trial,) = result["trials"]
    assert trial["batches"] == 40 and trial["state"] == "COMPLETED"
    assert os.path.isdir(result["best_checkpoint_path"])
    with open(os.path.join(result["best_checkpoint_path"], "metadata.json")) as f:
        assert json.load(f)["trial_id"] == trial["trial_id"]
    (exp,) = read(tmp_path, "e", "describe", str(result["experiment_id"]))
    assert exp["state"] == "COMPLETED" and exp["progress"] == 1.0
    assert workloads(tmp_path, trial["trial_id"]) == [
        ("training", 10), ("training", 20), ("validation", 20),
        ("training", 30), ("training", 40), ("validation", 40)]
    assert os.path.getsize(os.path.join(result["directory"], "trials", f"{trial['trial_id']}.log")) >= 0
    # Garbage collection kept the default (best + latest of the trial) only.
    checkpoints = read(tmp_path, "e", "lc", str(result["experiment_id"]))
    live = [c for c in checkpoints if c["state"] == "COMPLETED"]
    assert 1 <= len(live) <= 2 and result["best_checkpoint"] in {c["uuid"] for c in live}
    for c in checkpoints:
        assert os.path.isdir(os.path.join(tmp_path, "local", "checkpoints", c["uuid"])) == (c["state"] == "COMPLETED")


def test_summary_for_people(tmp_path, tiny_dir):
    out = run_det(["e", "create", tiny_dir / "const.yaml", tiny_dir, "--local", "--local-dir",
                   tmp_path / "local", "--no-progress"])
    assert out.returncode == 0, out.stderr
    assert "Experiment 1: COMPLETED" in out.stdout
    assert "Best checkpoint:" in out.stdout and "validation_loss" in out.stdout


def test_output_fits_80_columns_without_trailing_spaces_and_says_1_batch(tmp_path, tiny_dir):
    """At COLUMNS=80 no printed line is wider than the terminal (but a path, on a line of
    its own) or ends in spaces (rich left the space it wrapped at, and padded the table
    title); a trial of one batch logs
    "validation at 1 batch" (it said "1 batches")."""
    config = write_config(tmp_path, tiny_dir, scheduling_unit=1,
                          searcher={"name": "single", "metric": "validation_loss",
                                    "max_length": {"batches": 1}},
                          min_validation_period={"batches": 1})
    out = run_det(["e", "create", config, tiny_dir, "--local", "--local-dir",
                   tmp_path / "a-directory-name-long-enough-to-wrap" / "local"],
                  env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(l.startswith("Best checkpoint:") for l in lines), out.stdout
    # Paths are the exception: a line of their own, whole (a folded one cannot be copied).
    paths = [l for l in lines if l.startswith(str(tmp_path))]
    assert len(paths) == 3 and all(os.path.exists(p) for p in paths), out.stdout
    assert max(len(l) for l in lines if l not in paths) <= 80, out.stdout
    assert [l for l in lines if l != l.rstrip()] == [], out.stdout
    assert "validated at 1 batch: validation_loss=" in out.stdout
    assert out.stdout.startswith("Experiment 1: ") and "single, 1 slot;" in out.stdout, out.stdout
    log = (tmp_path / "a-directory-name-long-enough-to-wrap" / "local" / "experiments" / "1"
           / "trials" / "1.log").read_text()
    assert "validation at 1 batch: validation_loss=" in log and "1 batches" not in log, log


def test_random_search_runs_trials_in_parallel(tmp_path, tiny_dir):
    config = write_config(tmp_path, tiny_dir, hyperparameters={
        "global_batch_size": 16, "lr": {"type": "log", "minval": -2, "maxval": -0.5},
        "dropout": {"type": "double", "minval": 0.0, "maxval": 0.5}},
        searcher={"name": "random", "metric": "validation_loss", "max_trials": 3,
                  "max_length": {"batches": 20}},
        reproducibility={"experiment_seed": 7})
    out, result = create(tmp_path, config, tiny_dir, "--slots", "2")
    assert out.returncode == 0, out.stderr
    trials = result["trials"]
    assert len(trials) == 3 and all(t["state"] == "COMPLETED" for t in trials)
    assert len({t["hparams"]["lr"] for t in trials}) == 3
    starts = sorted(t["start_time"] for t in trials)
    ends = sorted(t["end_time"] for t in trials)
    assert starts[1] < ends[0], "two trials should have run at the same time"
    best = min(trials, key=lambda t: t["best_metric"])
    assert result["best_trial"]["trial_id"] == best["trial_id"]


def test_failing_trial_ends_experiment_in_error(tmp_path, tiny_dir):
    config = write_config(tmp_path, tiny_dir, hyperparameters={
        "global_batch_size": 16, "fail_at_batch": 5})
    out, result = create(tmp_path, config, tiny_dir)
    assert out.returncode == 1
    assert result["state"] == "ERROR"
    (trial,) = result["trials"]
    # Any failure, user code raising included, restarts up to max_restarts (as upstream).
    assert trial["state"] == "ERROR" and trial["restarts"] == yaml.safe_load(
        config.read_text()).get("max_restarts", 5)
    assert "TinyTrial.train_batch raised ValueError: planned failure at batch 5" in trial["error"]
    assert "planned failure" in out.stderr


def test_crashed_trial_restarts_from_checkpoint_without_losing_metrics(tmp_path, tiny_dir):
    marker = tmp_path / "crashed"
    config = write_config(tmp_path, tiny_dir, hyperparameters={
        "global_batch_size": 16, "crash_once_at_batch": 25},
        data={"crash_marker": str(marker)})
    out, result = create(tmp_path, config, tiny_dir)
    assert out.returncode == 0, out.stderr
    assert marker.exists()
    (trial,) = result["trials"]
    assert trial["restarts"] == 1 and trial["state"] == "COMPLETED" and trial["batches"] == 40
    # The crash came after the checkpoint at 20: rows up to 20 stay, none is duplicated.
    assert workloads(tmp_path, trial["trial_id"]) == [("training", 10), ("training", 20), ("validation", 20),
                     ("training", 30), ("training", 40), ("validation", 40)]


def test_test_mode_runs_in_seconds(tmp_path, tiny_dir):
    out = run_det(["e", "create", tiny_dir / "const.yaml", tiny_dir, "--test", "--local",
                   "--local-dir", tmp_path / "local"])
    assert out.returncode == 0, out.stderr
    assert "Model definition test succeeded" in out.stdout  # upstream 0.13's line


def test_test_mode_reports_user_error(tmp_path, tiny_dir):
    config = write_config(tmp_path, tiny_dir, entrypoint="model_def:LegacyNoLoss")
    out = run_det(["e", "create", config, tiny_dir, "--test", "--local-dir", tmp_path / "local"])
    assert out.returncode == 1
    assert "LegacyNoLoss.train_batch" in out.stderr and "'loss'" in out.stderr


def test_an_import_error_shows_the_users_frames_only(tmp_path, tiny_dir):
    """A model_def that fails to import: the user's frames and the error, none of
    importlib's (six ``<frozen importlib._bootstrap>`` lines came first)."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "model_def.py").write_text("import helper\n")
    (model / "helper.py").write_text("x = 1\nimport no_such_module_zz\n")
    out = run_det(["e", "create", tiny_dir / "const.yaml", model, "--test", "--local",
                   "--local-dir", tmp_path / "local"])
    assert out.returncode == 1
    assert "frozen" not in out.stderr and "importlib" not in out.stderr, out.stderr
    assert f'File "{model / "helper.py"}", line 2, in <module>' in out.stderr, out.stderr
    assert out.stderr.rstrip().endswith(
        "ModuleNotFoundError: No module named 'no_such_module_zz'"), out.stderr


def test_invalid_config_rejected_before_anything_runs(tmp_path, tiny_dir):
    config = write_config(tmp_path, tiny_dir, searcher={"name": "random", "metric": "x",
                                                        "max_trials": 0},
                          scheduling_unit=-1)
    out, _ = create(tmp_path, config, tiny_dir)
    assert out.returncode == 1
    assert "searcher.max_trials" in out.stderr and "searcher.max_length" in out.stderr
    assert "scheduling_unit" in out.stderr
    assert not (tmp_path / "local" / "experiments").exists()


def test_missing_model_dir(tmp_path, tiny_dir):
    out, _ = create(tmp_path, tiny_dir / "const.yaml", tmp_path / "nowhere")
    assert out.returncode == 1 and "nowhere" in out.stderr and "does not exist" in out.stderr


def test_experiment_list_local(tmp_path, tiny_dir):
    create(tmp_path, tiny_dir / "const.yaml", tiny_dir)
    out = run_det(["e", "list", "--local", "--local-dir", tmp_path / "local", "--json"])
    rows = json.loads(out.stdout)
    assert rows[0]["state"] == "COMPLETED" and rows[0]["searcher"] == "single"


def test_source_checkpoint_warm_start(tmp_path, tiny_dir):
    out, first = create(tmp_path, tiny_dir / "const.yaml", tiny_dir)
    assert out.returncode == 0, out.stderr
    config = write_config(tmp_path, tiny_dir, searcher={
        "name": "single", "metric": "validation_loss", "max_length": {"batches": 10},
        "source_checkpoint_uuid": first["best_checkpoint"]})
    out, second = create(tmp_path, config, tiny_dir)
    assert out.returncode == 0, out.stderr
    assert second["trials"][0]["warm_start"] == first["best_checkpoint"]
    # 10 batches from the trained weights beat 10 from scratch by far.
    assert second["trials"][0]["best_metric"] < 0.5


def test_grid_search_local(tmp_path, tiny_dir):
    config = write_config(tmp_path, tiny_dir, hyperparameters={
        "global_batch_size": 16, "lr": {"type": "double", "minval": 0.05, "maxval": 0.15, "count": 2},
        "dropout": {"type": "categorical", "vals": [0.0, 0.3]}},
        searcher={"name": "grid", "metric": "validation_loss", "max_length": {"batches": 10}},
        min_validation_period=None)
    out, result = create(tmp_path, config, tiny_dir, "--slots", "2")
    assert out.returncode == 0, out.stderr
    points = sorted((t["hparams"]["lr"], t["hparams"]["dropout"]) for t in result["trials"])
    assert points == [(0.05, 0.0), (0.05, 0.3), (0.15, 0.0), (0.15, 0.3)]


def test_pbt_local_warm_starts_from_parents(tmp_path, tiny_dir):
    config = write_config(tmp_path, tiny_dir, hyperparameters={
        "global_batch_size": 16, "lr": {"type": "log", "minval": -2, "maxval": -0.5},
        "dropout": {"type": "double", "minval": 0.0, "maxval": 0.5}},
        searcher={"name": "pbt", "metric": "validation_loss", "population_size": 3,
                  "num_rounds": 2, "length_per_round": {"batches": 10},
                  "replace_function": {"truncate_fraction": 0.34},
                  "explore_function": {"resample_probability": 0.3, "perturb_factor": 0.2}},
        min_validation_period=None, reproducibility={"experiment_seed": 3})
    out, result = create(tmp_path, config, tiny_dir, "--slots", "2")
    assert out.returncode == 0, out.stderr
    assert result["state"] == "COMPLETED"
    trials = result["trials"]
    children = [t for t in trials if t["warm_start"]]
    assert len(trials) == 4 and len(children) == 1
    all_ckpts = {c["uuid"] for c in read(tmp_path, "e", "lc", str(result["experiment_id"]))}
    assert children[0]["warm_start"] in all_ckpts
    # The warm-start source survives garbage collection.
    assert os.path.isdir(os.path.join(tmp_path, "local", "checkpoints", children[0]["warm_start"]))
