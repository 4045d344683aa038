"""Trials written against upstream 0.13's low-level controller API (``det.Trial`` +
``det.CallbackTrialController`` / ``det.LoopTrialController``) run like any other trial."""

import json
import pathlib
import tempfile

import pytest

import determined as det
from determined.config import Length, validate_config
from determined.harness import InProcessHost, OpKind, TrialEnv, TrialOp, TrialRunner
from determined.storage import SharedFSStorageManager
from det_cli_testing import run_det

FIXTURE = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "controller_trial"


def test_callback_controller_trial_runs_locally(tmp_path):
    out = run_det(["e", "create", FIXTURE / "const.yaml", FIXTURE, "--local", "--json",
                   "--no-progress", "--local-dir", tmp_path])
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["state"] == "COMPLETED"
    trial = result["trials"][0]
    assert trial["batches"] == 20
    # It learned y = 3x (w starts at 0): the checkpoints it wrote were restored correctly.
    assert trial["best_metric"] < 0.1


def _run_in_process(trial_class, ops, tmp_path, config=None, latest=None, data=None):
    cfg = validate_config(config or {
        "entrypoint": "model_def:LinearTrial", "scheduling_unit": 5, "data": data or {},
        "hyperparameters": {"global_batch_size": 8, "lr": 0.1},
        "searcher": {"name": "single", "metric": "validation_error",
                     "max_length": {"batches": 10}},
    })
    env = TrialEnv(cfg, {"global_batch_size": 8, "lr": 0.1}, str(FIXTURE), trial_seed=3,
                   latest_checkpoint=latest)
    host = InProcessHost(ops, smaller_is_better=True)
    storage = SharedFSStorageManager(str(tmp_path / "ckpt"))
    reason = TrialRunner(env, host, storage, trial_class=trial_class).run()
    return host, storage, reason


def _plan(batches):
    return [TrialOp(OpKind.TRAIN, Length.from_dict({"batches": batches})),
            TrialOp(OpKind.VALIDATE), TrialOp(OpKind.CLOSE)]


class _Loop(det.LoopTrialController):
    """A controller owning its loop, as upstream's PyTorch/Keras controllers did."""

    calls = []

    @staticmethod
    def pre_execute_hook(env, hvd_config):
        _Loop.calls.append(("pre_execute_hook", env.hparams["lr"], hvd_config.use))

    @staticmethod
    def from_trial(trial_inst, context, env, workloads, load_path, rendezvous_info, hvd_config):
        cls = type(trial_inst).trial_controller_class
        return cls(context, env, workloads, load_path, rendezvous_info, hvd_config)

    @staticmethod
    def from_native(*args):
        raise NotImplementedError

    def run(self):
        from determined.workload import Workload

        for w, args, respond in self.workloads:
            _Loop.calls.append(w.kind.value)
            if w.kind == Workload.Kind.RUN_STEP:
                batches = [{"loss": 1.0 / (w.total_batches_processed + i + 1)}
                           for i in range(w.num_batches)]
                respond(det.util.wrap_metrics(det.util.make_metrics(None, batches), False))
            elif w.kind == Workload.Kind.COMPUTE_VALIDATION_METRICS:
                respond(det.util.wrap_metrics({"validation_metrics": {"validation_error": 0.5}},
                                              False))
            elif w.kind == Workload.Kind.CHECKPOINT_MODEL:
                (args[0] / "loop.txt").write_text(str(w.total_batches_processed))
                respond({})
            else:
                respond(None)
                return


class _LoopTrial(det.Trial):
    trial_controller_class = _Loop

    def __init__(self, context):
        self.context = context


def test_loop_controller_receives_workloads_in_order(tmp_path):
    _Loop.calls.clear()
    host, storage, _ = _run_in_process(_LoopTrial, _plan(10), tmp_path)
    assert _Loop.calls[0] == ("pre_execute_hook", 0.1, False)
    assert _Loop.calls[1:] == ["RUN_STEP", "RUN_STEP", "CHECKPOINT_MODEL",
                               "COMPUTE_VALIDATION_METRICS", "TERMINATE"]
    assert [m["num_inputs"] for _, m in host.training] == [40, 40]
    assert host.training[1][1]["avg_metrics"]["loss"] == pytest.approx(
        sum(1 / i for i in range(6, 11)) / 5)
    (_, uuid, _), = host.checkpoints
    with storage.restore_path(uuid) as path:
        assert (pathlib.Path(path) / "loop.txt").read_text() == "10"


def test_callback_controller_stop_request_and_restore(tmp_path):
    import model_def_loader

    trial_class = model_def_loader.load(FIXTURE)
    host, storage, reason = _run_in_process(trial_class, _plan(10), tmp_path,
                                            data={"stop_after_first_step": True})
    assert reason == "user_requested_stop" and len(host.training) == 1
    (_, uuid, _), = host.checkpoints
    w_saved = json.loads(pathlib.Path(storage.describe(uuid), "weights.json").read_text())["w"]
    # Restart from that checkpoint: the controller's load() restores w, training goes on.
    host2, _, _ = _run_in_process(trial_class, _plan(10), tmp_path,
                                  latest=storage.describe(uuid))
    assert len(host2.training) == 1  # 5 batches were done, 5 remain
    assert host2.validations[-1][1]["validation_metrics"]["w"] != 0.0
    assert abs(3.0 - host2.validations[-1][1]["validation_metrics"]["w"]) < abs(3.0 - w_saved)


def test_controller_error_names_the_method(tmp_path):
    class Broken(_Loop):
        def run(self):
            raise ValueError("bad workload handling")

    class BrokenTrial(det.Trial):
        trial_controller_class = Broken

        def __init__(self, context):
            self.context = context

    with pytest.raises(det.errors.UserCodeError, match=r"Broken.run raised ValueError: bad"):
        _run_in_process(BrokenTrial, _plan(5), tmp_path)


def test_test_one_batch_and_load_trial_on_local(tmp_path, monkeypatch):
    import model_def_loader

    from determined.experimental import _load_trial_on_local, test_one_batch

    monkeypatch.chdir(FIXTURE)
    trial_class = model_def_loader.load(FIXTURE)
    config = {"hyperparameters": {"global_batch_size": 4, "lr": 0.1},
              "searcher": {"name": "single", "metric": "validation_error",
                           "max_length": {"batches": 1}}}
    out = test_one_batch(trial_class=trial_class, config=config)
    assert len(out["training"]) == 1 and "validation_error" in out["validations"][0][1][
        "validation_metrics"]
    cls, context = _load_trial_on_local(FIXTURE, True, {**config,
                                                      "entrypoint": "model_def:LinearTrial"},
                                        {"global_batch_size": 4, "lr": 0.5})
    assert cls.__name__ == "LinearTrial" and context.get_hparam("lr") == 0.5


def test_local_test_mode_takes_a_partial_config_and_warns_fields_without_effect(tmp_path):
    partial = tmp_path / "partial.yaml"
    partial.write_text("entrypoint: model_def:LinearTrial\n"
                       "hyperparameters: {global_batch_size: 4, lr: 1e-2}\n"
                       "searcher: {max_length: {batches: 50}}\n"  # no name, no metric
                       "resources: {shm_size: 2000000000}\n")
    out = run_det(["e", "create", partial, FIXTURE, "--local", "--test", "--local-dir", tmp_path])
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Model definition test" in out.stdout + out.stderr
    assert out.stderr.count("det: warning: resources.shm_size is accepted but has no effect") == 1
