"""The Native API's cluster mode against a real master (SPEC 4.8).

``det.experimental.create`` submits a trial class; ``keras.init`` / ``estimator.init``
submit a script that the master's trial processes re-run up to the training call.
The scripts live in ``native_cluster/`` and run as real subprocesses.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from master_testing import MasterProcess, free_port, wait_for_state  # noqa: E402

from determined.errors import (  # noqa: E402
    InvalidConfigError, InvalidModelDefError, InvalidTrialError, MasterError,
)
from determined.experimental import Determined, Mode, create  # noqa: E402
from determined.harness._native_trial import current_trial_env, native_trial_class  # noqa: E402
from determined.harness import TrialEnv  # noqa: E402
from determined.harness._usercode import load_trial_class  # noqa: E402

SCRIPTS = pathlib.Path(__file__).resolve().parent / "native_cluster"
TERMINAL = ["COMPLETED", "CANCELED", "ERROR"]


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = MasterProcess(str(tmp_path_factory.mktemp("native-master")), slots=2).start()
    yield m
    m.stop()


@pytest.fixture
def tiny_ctx(tiny_dir, tmp_path):
    ctx = tmp_path / "ctx"
    shutil.copytree(tiny_dir, ctx)
    return ctx


def tiny_config(**extra):
    cfg = {
        "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2},
        "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 20}},
        "scheduling_unit": 10,
        "max_restarts": 0,
    }
    cfg.update(extra)
    return cfg


def finished(master, exp_id, timeout=180):
    with master.client() as c:
        exp = wait_for_state(c, exp_id, TERMINAL, timeout=timeout)
        trials = [c.get(f"/trials/{t['id']}").json() for t in exp["trials"]]
        checkpoints = c.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
        if exp["state"] != "COMPLETED":
            logs = [c.get(f"/trials/{t['id']}/logs").json()["logs"] for t in exp["trials"]]
            pytest.fail(f"experiment {exp_id} {exp['state']}:\n"
                        + "\n".join(line["line"] for lines in logs for line in lines[-40:])
                        + "\n" + master.log())
    return exp, trials, checkpoints


def validations(trial):
    return [(m["total_batches"], m["metrics"]) for m in trial["metrics"] if m["kind"] == "validation"]


def run_script(name, ctx, master, *args, timeout=240):
    """Copy ``native_cluster/<name>`` into ``ctx`` and run it there against ``master``."""
    ctx.mkdir(exist_ok=True)
    shutil.copy(SCRIPTS / name, ctx / name)
    env = dict(os.environ, DET_MASTER=master.url.replace("http://", ""))
    done = subprocess.run([sys.executable, name, *args], cwd=ctx, env=env, text=True,
                          capture_output=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"Created experiment (\d+)", done.stdout)
    assert found, done.stdout + done.stderr
    return int(found.group(1)), done.stdout


# -- det.experimental.create ---------------------------------------------------------------


def test_create_submits_an_importable_trial_class(master, tiny_ctx, capsys):
    trial_class = load_trial_class("model_def:TinyTrial", str(tiny_ctx))
    config = tiny_config(hyperparameters={"global_batch_size": 16, "dropout": 0.2,
                                          "lr": {"type": "categorical", "vals": [0.05, 0.2]}},
                         searcher={"name": "grid", "metric": "validation_loss",
                                   "max_length": {"batches": 20}})
    exp_id = create(trial_class, config, context_dir=str(tiny_ctx), mode=Mode.CLUSTER,
                    master_url=master.url)
    assert f"Created experiment {exp_id}" in capsys.readouterr().out

    exp, trials, checkpoints = finished(master, exp_id)
    assert exp["config"]["entrypoint"] == "model_def:TinyTrial"
    assert not (exp["config"].get("internal") or {}).get("native")
    assert sorted(t["hparams"]["lr"] for t in trials) == [0.05, 0.2]
    for t in trials:
        assert t["total_batches"] == 20
        assert [b for b, _ in validations(t)] == [20]
        assert "validation_loss" in validations(t)[0][1]
    assert {c["state"] for c in checkpoints} == {"COMPLETED"}
    # an entrypoint experiment's checkpoints load through the SDK
    loaded = Determined(master.url).get_experiment(exp_id).top_checkpoint().load()
    assert type(loaded).__name__ == "TinyTrial"


def test_create_reruns_the_script_for_a_class_of_main(master, tmp_path):
    ctx = tmp_path / "ctx"
    exp_id, out = run_script("create_main.py", ctx, master, ".")
    assert f"create returned {exp_id}" in out

    exp, trials, _ = finished(master, exp_id)
    assert exp["config"]["entrypoint"] is None
    assert exp["config"]["internal"]["native"]["command"] == ["create_main.py", "."]
    assert trials[0]["total_batches"] == 12
    assert [b for b, _ in validations(trials[0])] == [12]


def test_create_errors_name_what_is_wrong(master, tiny_ctx, tmp_path):
    trial_class = load_trial_class("model_def:TinyTrial", str(tiny_ctx))
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(MasterError, match=f"no Determined master is reachable at {re.escape(url)}"):
        create(trial_class, tiny_config(), context_dir=str(tiny_ctx), master_url=url)
    with pytest.raises(InvalidModelDefError, match="context_dir is required"):
        create(trial_class, tiny_config(), master_url=master.url)
    missing = tmp_path / "nowhere"
    with pytest.raises(InvalidModelDefError, match=f"context_dir={re.escape(repr(str(missing)))}.*does not exist"):
        create(trial_class, tiny_config(), context_dir=str(missing), master_url=master.url)
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(InvalidModelDefError, match="model_def.TinyTrial is not importable from context_dir"):
        create(trial_class, tiny_config(), context_dir=str(other), master_url=master.url)

    class LocalTrial(trial_class):
        pass

    with pytest.raises(InvalidModelDefError, match="defined inside a function"):
        create(LocalTrial, tiny_config(), context_dir=str(tiny_ctx), master_url=master.url)
    with pytest.raises(InvalidConfigError, match="not_a_field"):
        create(trial_class, tiny_config(not_a_field=1), context_dir=str(tiny_ctx),
               master_url=master.url)


def test_master_refusal_is_reported(master, tiny_ctx):
    """The entrypoint's module is excluded by .detignore: the master refuses it."""
    trial_class = load_trial_class("model_def:TinyTrial", str(tiny_ctx))
    (tiny_ctx / ".detignore").write_text("model_def.py\n")
    with pytest.raises(MasterError, match=f"(?s)master at {re.escape(master.url)} refused the "
                                          "experiment.*entrypoint"):
        create(trial_class, tiny_config(), context_dir=str(tiny_ctx), master_url=master.url)


def test_too_large_context_dir(master, tiny_ctx):
    trial_class = load_trial_class("model_def:TinyTrial", str(tiny_ctx))
    with open(tiny_ctx / "data.bin", "wb") as f:
        f.write(os.urandom(97 * 1000 * 1000))
    with pytest.raises(InvalidModelDefError, match=r"MB packed; the limit is 96 MB.*\.detignore"):
        create(trial_class, tiny_config(), context_dir=str(tiny_ctx), master_url=master.url)


def test_create_test_mode_waits_for_a_one_batch_experiment(master, tiny_ctx, capsys):
    trial_class = load_trial_class("model_def:TinyTrial", str(tiny_ctx))
    exp_id = create(trial_class, tiny_config(description="tiny"), test=True,
                    context_dir=str(tiny_ctx), master_url=master.url)
    out = capsys.readouterr().out
    assert f"Created experiment {exp_id}" in out and f"Experiment {exp_id}: COMPLETED" in out
    exp, trials, _ = finished(master, exp_id, timeout=5)
    assert exp["description"] == "[test-mode] tiny"
    assert exp["config"]["max_restarts"] == 0
    assert trials[0]["total_batches"] == 1
    assert [b for b, _ in validations(trials[0])] == [1]


RENAMED = """from model_def import TinyTrial


class Renamed(TinyTrial):
    def evaluate_batch(self, batch):
        metrics = super().evaluate_batch(batch)
        return {"vloss": metrics.pop("validation_loss"), **metrics}
"""


def test_a_default_metric_the_trial_lacks_is_said_in_the_users_terms(master, tiny_ctx):
    """The config names no searcher metric (validation_loss, the default, is filled in)
    and the trial reports none by that name: the trial's error says what the config set,
    never the default as though the user had written it."""
    (tiny_ctx / "renamed_def.py").write_text(RENAMED)
    trial_class = load_trial_class("renamed_def:Renamed", str(tiny_ctx))
    config = tiny_config(searcher={"name": "single", "max_length": {"batches": 1}})
    with pytest.raises(MasterError, match=r"test experiment (\d+) ended ERROR") as failed:
        create(trial_class, config, test=True, context_dir=str(tiny_ctx), master_url=master.url)
    exp_id = int(re.search(r"experiment (\d+)", str(failed.value)).group(1))
    with master.client() as c:
        (trial,) = c.get(f"/experiments/{exp_id}").json()["trials"]
        lines = c.get(f"/trials/{trial['id']}/logs").json()["logs"]
    logs = "\n".join(line["line"] for line in lines)
    assert ("the config's searcher section sets no metric, so the searcher metric is assumed "
            "to be validation_loss (the default); the validation metrics of Renamed lack it "
            "(received: accuracy, vloss); return it from evaluate_batch/evaluate_full_dataset "
            "or set searcher.metric") in logs, logs
    assert "'validation_loss'" not in logs and "change searcher.metric" not in logs, logs


def test_script_failing_on_the_cluster_fails_the_trial_clearly(master, tiny_ctx):
    (tiny_ctx / "data.txt").write_text("0.1\n")
    (tiny_ctx / ".detignore").write_text("data.txt\n")
    exp_id, _ = run_script("missing_data.py", tiny_ctx, master)
    with master.client() as c:
        exp = wait_for_state(c, exp_id, TERMINAL, timeout=120)
        assert exp["state"] == "ERROR"
        (trial,) = exp["trials"]
        logs = "\n".join(line["line"] for line in c.get(f"/trials/{trial['id']}/logs").json()["logs"])
    assert trial["restarts"] == 0  # a user error is not retried
    assert "the Native API command ['missing_data.py'] raised FileNotFoundError" in logs
    assert "data.txt" in logs and "missing_data.py" in logs


def native_env(model_dir, command):
    config = {"internal": {"native": {"command": command}}, "entrypoint": None}
    return TrialEnv(experiment_config=config, hparams={}, model_dir=str(model_dir))


def test_trial_side_errors_name_the_command(tmp_path):
    (tmp_path / "quiet.py").write_text("x = 1\n")
    (tmp_path / "leaves.py").write_text("import sys\nsys.exit(3)\n")
    with pytest.raises(InvalidTrialError, match=r"\['quiet.py'\] finished without a training call"):
        native_trial_class(native_env(tmp_path, ["quiet.py"]))
    with pytest.raises(InvalidTrialError, match=r"exited \(code 3\) before its training call"):
        native_trial_class(native_env(tmp_path, ["python3", "leaves.py"]))
    with pytest.raises(InvalidTrialError, match="'absent.py' is not in the context directory"):
        native_trial_class(native_env(tmp_path, ["absent.py"]))
    with pytest.raises(InvalidTrialError, match="Expected internal.native.command to start with a .py"):
        native_trial_class(native_env(tmp_path, ["train.ipynb"]))
    with pytest.raises(InvalidTrialError, match="non-empty list of strings"):
        native_trial_class(native_env(tmp_path, []))
    assert native_trial_class(TrialEnv({"entrypoint": "m:C"}, {}, str(tmp_path))) is None
    assert current_trial_env() is None  # this process may submit experiments again


# -- keras.init / estimator.init ----------------------------------------------------------


def test_keras_native_script_trains_on_the_cluster(master, tmp_path):
    ctx = tmp_path / "ctx"
    exp_id, _ = run_script("keras_native.py", ctx, master, "--flag", "1")
    assert not (ctx / "after_fit.txt").exists()  # init() exits after submitting

    exp, trials, checkpoints = finished(master, exp_id)
    assert exp["config"]["internal"]["native"]["command"] == ["keras_native.py", "--flag", "1"]
    assert exp["config"]["description"] == "keras native --flag 1"
    (trial,) = trials
    assert trial["hparams"] == {"global_batch_size": 16, "hidden": 8}
    assert trial["total_batches"] == 20  # the searcher's length, not fit(epochs=5)
    vals = validations(trial)
    assert [b for b, _ in vals] == [10, 20]
    assert {"val_loss", "val_accuracy"} <= set(vals[-1][1])
    assert trial["best_validation"] == min(m["val_loss"] for _, m in vals)
    assert checkpoints and {c["format"] for c in checkpoints} == {"h5"}
    model_dir = pathlib.Path(master.data_dir) / "experiments" / str(exp_id) / "model_def"
    assert (model_dir / "keras_native.py").exists()
    assert not (model_dir / "after_fit.txt").exists()  # code after model.fit never runs


def test_estimator_native_script_trains_on_the_cluster(master, tmp_path):
    ctx = tmp_path / "ctx"
    exp_id, _ = run_script("estimator_native.py", ctx, master)

    exp, trials, checkpoints = finished(master, exp_id)
    (trial,) = trials
    assert trial["total_batches"] == 10
    (batches, metrics), = validations(trial)
    assert batches == 10 and 0.0 <= metrics["accuracy"] <= 1.0
    assert {c["format"] for c in checkpoints} == {"saved_model"}
    model_dir = pathlib.Path(master.data_dir) / "experiments" / str(exp_id) / "model_def"
    assert not (model_dir / "after_train.txt").exists()

