"""PyTorchTrial end to end through the real trial runner (in-process)."""

import os

import pytest
import torch

from determined.errors import InvalidModelDefError, InvalidTrialError, UserCodeError
from determined.harness import ExitReason, InProcessHost, TrialRunner
from determined.pytorch import load_trial_from_checkpoint_path
from determined.storage import SharedFSStorageManager

from pytorch_helpers import make_env, run_trial, train_plan


def val_metric(host, name):
    return [m["validation_metrics"][name] for _, m in host.validations]


@pytest.mark.parametrize("entrypoint,config", [
    ("model_def:DigitsTrial", "const.yaml"),
    ("legacy_model_def:DigitsLegacyTrial", "legacy_const.yaml"),
])
def test_digits_example_learns_in_both_styles(examples_dir, tmp_path, entrypoint, config):
    d = examples_dir / "digits_pytorch"
    env = make_env(d, config, entrypoint=entrypoint)
    host, storage, reason = run_trial(env, train_plan(10, 150), tmp_path)
    assert reason == ExitReason.COMPLETED
    acc = val_metric(host, "accuracy")
    assert acc[-1] > 0.85 and acc[-1] > acc[0]
    # training metrics: one avg per workload, per-batch values, num_inputs
    batches, first = host.training[0]
    assert batches == 10 and len(first["batch_metrics"]) == 10
    assert first["num_inputs"] == 10 * 32
    assert abs(first["avg_metrics"]["loss"] - sum(m["loss"] for m in first["batch_metrics"]) / 10) < 1e-9


def test_gan_example_two_models_two_optimizers(examples_dir, tmp_path):
    d = examples_dir / "gan_pytorch"
    env = make_env(d)
    host, storage, _ = run_trial(env, train_plan(1, 300), tmp_path)
    gap = val_metric(host, "moment_gap")
    assert gap[-1] < gap[0]
    _, m = host.training[-1]
    assert set(m["avg_metrics"]) == {"loss_d", "loss_g"}
    state = torch.load(os.path.join(storage.root, host.checkpoints[-1][1], "state_dict.pth"),
                       weights_only=False)
    assert len(state["models_state_dict"]) == 2 and len(state["optimizers_state_dict"]) == 2


def test_workload_sequence_follows_periods_and_policy(tiny_dir, tmp_path):
    env = make_env(tiny_dir, overrides={"min_checkpoint_period": {"batches": 15},
                                        "checkpoint_policy": "all"})
    host, _, _ = run_trial(env, train_plan(40), tmp_path)
    assert [b for b, _ in host.training] == [10, 15, 20, 30, 35, 40]
    assert [b for b, _ in host.validations] == [20, 40]
    assert [b for b, _, _ in host.checkpoints] == [15, 20, 35, 40]


def test_best_policy_asks_if_best_only_where_a_checkpoint_could_follow(tiny_dir, tmp_path):
    # A Validate op checkpoints first: asking the host (a request to the master) whether
    # its validation is the best could not lead to another checkpoint.
    asked = []

    class Host(InProcessHost):
        def is_best_validation(self, value):
            asked.append(self.training[-1][0])
            return super().is_best_validation(value)

    env = make_env(tiny_dir, overrides={"checkpoint_policy": "best",
                                        "min_validation_period": {"batches": 30}})
    host = Host(train_plan(40))
    TrialRunner(env, host, SharedFSStorageManager(str(tmp_path))).run()
    assert [b for b, _ in host.validations] == [30, 40]
    assert [b for b, _, _ in host.checkpoints] == [30, 40]
    assert asked == [30]  # the period validation at 30 asks; the Validate op at 40 does not


def test_the_validation_of_a_validate_op_is_reported_with_its_completion(tiny_dir, tmp_path):
    # One report, so the master's REST host sends it as one request.
    completing = []

    class Host(InProcessHost):
        def report_validation_completing_op(self, batches_trained, metrics):
            completing.append(batches_trained)
            super().report_validation_completing_op(batches_trained, metrics)

    env = make_env(tiny_dir, overrides={"min_validation_period": {"batches": 20}})
    host = Host(train_plan(30, 50))
    TrialRunner(env, host, SharedFSStorageManager(str(tmp_path))).run()
    assert [b for b, _ in host.validations] == [20, 30, 50]
    # 20 and 50 are period validations (the Validate op at 50 reuses the one at 50)
    assert completing == [30]
    assert [(b, m["validation_metrics"]) for b, m in host.searcher_validations] == [
        (b, m["validation_metrics"]) for b, m in host.validations if b in (30, 50)]


def test_a_stop_answered_with_a_validate_ops_validation_still_completes_the_op(tiny_dir,
                                                                              tmp_path):
    # Reported together, the searcher has the validation even when the trial must stop
    # (pause) right after it; the trial resumes from the checkpoint taken before it.
    env = make_env(tiny_dir)
    host, _, reason = run_trial(env, train_plan(10), tmp_path, stop_after_workloads=3)
    assert reason == ExitReason.STOPPED
    assert [b for b, _, _ in host.checkpoints] == [10]
    assert [b for b, _ in host.validations] == [10]
    assert [b for b, _ in host.searcher_validations] == [10]


def test_initial_validation_and_none_policy(tiny_dir, tmp_path):
    env = make_env(tiny_dir, overrides={"perform_initial_validation": True,
                                        "checkpoint_policy": "none",
                                        "min_validation_period": None})
    host, _, _ = run_trial(env, train_plan(25), tmp_path)
    assert [b for b, _ in host.validations] == [0, 25]
    # "none": only the checkpoint before the searcher-visible validation
    assert [b for b, _, _ in host.checkpoints] == [25]


def test_checkpoint_contents_and_loading_api(tiny_dir, tmp_path):
    env = make_env(tiny_dir)
    host, storage, _ = run_trial(env, train_plan(30), tmp_path)
    batches, uuid, meta = host.checkpoints[-1]
    path = os.path.join(storage.root, uuid)
    assert sorted(os.listdir(path)) == ["code", "metadata.json", "state_dict.pth"]
    assert os.path.exists(os.path.join(path, "code", "model_def.py"))
    assert meta["batch_number"] == 30 and meta["framework"].startswith("torch-")
    assert meta["format"] == "cloudpickle" and meta["hparams"]["lr"] == 0.1
    assert host.searcher_validations[-1][0] == 30
    trial = load_trial_from_checkpoint_path(path)
    model = trial.context.models[0]
    saved = torch.load(os.path.join(path, "state_dict.pth"), weights_only=False)
    assert torch.equal(model.state_dict()["0.weight"], saved["models_state_dict"][0]["0.weight"])
    assert not model.training


def test_nested_batches_and_reducers(tiny_dir, tmp_path):
    env = make_env(tiny_dir, entrypoint="model_def:NestedBatches")
    host, _, _ = run_trial(env, train_plan(20), tmp_path)
    m = host.validations[-1][1]["validation_metrics"]
    assert m["batch_size_sum"] == 128.0  # SUM over the 4 validation batches of 32
    assert m["max_loss"] >= m["validation_loss"] >= m["min_loss"]
    assert m["min_loss"] <= m["median_loss"] <= m["max_loss"]
    assert isinstance(m["correct"], int) and 0 <= m["correct"] <= 128


def test_evaluate_full_dataset(tiny_dir, tmp_path):
    env = make_env(tiny_dir, entrypoint="model_def:FullDataset")
    host, _, _ = run_trial(env, train_plan(20), tmp_path)
    m = host.validations[-1][1]["validation_metrics"]
    assert abs(m["accuracy"] + m["validation_loss"] - 1.0) < 1e-9


def test_lr_scheduler_steps_every_epoch_and_callbacks_run(tiny_dir, tmp_path):
    events = tmp_path / "events.txt"
    env = make_env(tiny_dir, overrides={"data": {"events_file": str(events)}})
    host, _, _ = run_trial(env, train_plan(50), tmp_path)
    lrs = [m["lr"] for _, w in host.training for m in w["batch_metrics"]]
    # 24 batches per epoch: lr is 0.1 for batches 0-23, 0.09 for 24-47, 0.081 after.
    assert lrs[0] == pytest.approx(0.1) and lrs[23] == pytest.approx(0.1)
    assert lrs[24] == pytest.approx(0.09) and lrs[48] == pytest.approx(0.081)
    text = events.read_text().splitlines()
    assert text[:1] == ["epoch_start 0"] and "epoch_start 2" in text
    assert sum(l.startswith("validation_end") for l in text) == 3
    assert any(l.startswith("checkpoint_end") for l in text)


@pytest.mark.parametrize("kinds", ["scalars", "all"])
def test_training_metrics_of_every_kind_reach_the_host_as_plain_values(tiny_dir, tmp_path,
                                                                       kinds):
    env = make_env(tiny_dir, entrypoint="model_def:MetricKinds", hparams={"kinds": kinds})
    host, _, _ = run_trial(env, train_plan(4, validate_each=False), tmp_path)
    ((batches, metrics),) = host.training
    rows = metrics["batch_metrics"]
    losses = [row["loss"] for row in rows]
    expected = [{"loss": losses[i], "count": i, "flag": i % 2 == 0, "half": i / 4,
                 "python": i * 0.5, "numpy": float(i), "grad": float(i)} for i in range(4)]
    averages = {"loss": sum(losses) / 4, "count": 1.5, "flag": None, "half": 0.375,
                "python": 0.75, "numpy": 1.5, "grad": 1.5}
    if kinds == "all":
        for i, row in enumerate(expected):
            row.update({"vector": [float(i), 1.0], "shapes": 1.0 if i % 2 else [2.0],
                        "7": 3.0, "text": "x"})
        averages.update({"vector": None, "shapes": None, "7": 3.0, "text": None})
    assert rows == expected
    assert [[type(v) for v in row.values()] for row in rows] == [
        [type(v) for v in row.values()] for row in expected]  # ints stay ints, bools bools
    assert all(type(v) is float for v in losses)
    assert metrics["avg_metrics"] == averages
    assert metrics["num_inputs"] == 4 * 16


def test_what_a_workload_end_callback_adds_to_training_metrics_is_made_plain(tiny_dir,
                                                                           tmp_path):
    env = make_env(tiny_dir, entrypoint="model_def:MetricKinds",
                   hparams={"kinds": "scalars", "mutating_callback": True})
    host, _, _ = run_trial(env, train_plan(2, validate_each=False), tmp_path)
    ((_, metrics),) = host.training
    assert metrics["avg_metrics"]["extra"] == 1.5
    assert type(metrics["avg_metrics"]["extra"]) is float
    assert metrics["batch_metrics"][0]["extra"] == [1, 2]


def test_user_stop_request_checkpoints_and_exits(tiny_dir, tmp_path):
    env = make_env(tiny_dir, hparams={"stop_at_batch": 12})
    host, _, reason = run_trial(env, train_plan(40), tmp_path)
    assert reason == ExitReason.USER_REQUESTED_STOP
    assert host.early_exit == ExitReason.USER_REQUESTED_STOP
    assert host.checkpoints[-1][0] == 20


def test_pause_checkpoints_then_stops(tiny_dir, tmp_path):
    env = make_env(tiny_dir)
    host, _, reason = run_trial(env, train_plan(40), tmp_path, stop_after_workloads=1)
    assert reason == ExitReason.STOPPED
    assert [b for b, _, _ in host.checkpoints] == [10]


# ---------------------------------------------------------------- bad user code


def test_missing_abstract_method_named(tiny_dir, tmp_path):
    env = make_env(tiny_dir, entrypoint="model_def:MissingValidationLoader")
    with pytest.raises(InvalidTrialError) as e:
        run_trial(env, train_plan(5), tmp_path)
    assert "model_def.py: MissingValidationLoader" in str(e.value)
    assert "build_validation_data_loader" in str(e.value)


@pytest.mark.parametrize("entrypoint,needle", [
    ("nope:TinyTrial", "module 'nope' not found"),
    ("model_def:NoSuchClass", "has no attribute 'NoSuchClass'"),
    ("model_def:make_data", "Expected a subclass"),
])
def test_unresolvable_entrypoint(tiny_dir, tmp_path, entrypoint, needle):
    env = make_env(tiny_dir, entrypoint=entrypoint)
    with pytest.raises(InvalidModelDefError, match=needle):
        run_trial(env, train_plan(5), tmp_path)


def test_train_batch_without_loss(tiny_dir, tmp_path):
    env = make_env(tiny_dir, entrypoint="model_def:LegacyNoLoss")
    with pytest.raises(UserCodeError) as e:
        run_trial(env, train_plan(5), tmp_path)
    text = str(e.value)
    assert "model_def.py: LegacyNoLoss.train_batch" in text and "'loss'" in text and "error" in text


def test_train_batch_returning_none(tiny_dir, tmp_path):
    env = make_env(tiny_dir, hparams={"return_none": True})
    with pytest.raises(UserCodeError, match="TinyTrial.train_batch.*loss tensor or a dict"):
        run_trial(env, train_plan(5), tmp_path)


def test_exception_in_user_code_carries_user_traceback(tiny_dir, tmp_path):
    env = make_env(tiny_dir, hparams={"fail_at_batch": 3})
    with pytest.raises(UserCodeError) as e:
        run_trial(env, train_plan(10), tmp_path)
    text = str(e.value)
    assert "TinyTrial.train_batch raised ValueError: planned failure at batch 3" in text
    assert "Traceback" in text and "model_def.py" in e.value.user_traceback
    assert "determined/harness" not in e.value.user_traceback


def test_exception_in_init_named(tiny_dir, tmp_path):
    env = make_env(tiny_dir, entrypoint="model_def:InitRaises")
    with pytest.raises(UserCodeError, match=r"InitRaises.__init__ raised KeyError"):
        run_trial(env, train_plan(5), tmp_path)


def test_both_evaluation_methods_rejected(tiny_dir, tmp_path):
    env = make_env(tiny_dir, entrypoint="model_def:BothEvaluations")
    with pytest.raises(InvalidTrialError, match="exactly one of evaluate_batch and evaluate_full_dataset"):
        run_trial(env, train_plan(5), tmp_path)


def test_torch_dataloader_rejected_with_hint(tiny_dir, tmp_path):
    env = make_env(tiny_dir, entrypoint="model_def:TorchLoader")
    with pytest.raises(InvalidTrialError, match="use det.pytorch.DataLoader"):
        run_trial(env, train_plan(5), tmp_path)


def test_missing_searcher_metric(tiny_dir, tmp_path):
    env = make_env(tiny_dir, overrides={"searcher": {"name": "single", "metric": "nope",
                                                      "max_length": {"batches": 5}}})
    with pytest.raises(InvalidTrialError, match="lack the searcher metric 'nope'.*accuracy, validation_loss"):
        run_trial(env, train_plan(5), tmp_path)


def test_context_api(tiny_dir):
    from determined.pytorch import PyTorchTrialContext

    env = make_env(tiny_dir, overrides={"data": {"k": 1}})
    ctx = PyTorchTrialContext(env)
    assert ctx.get_per_slot_batch_size() == ctx.get_global_batch_size() == 16
    assert ctx.get_data_config() == {"k": 1}
    assert ctx.get_hparam("lr") == 0.1
    with pytest.raises(ValueError, match="defined: .*lr"):
        ctx.get_hparam("nope")
    assert ctx.distributed.get_rank() == 0 and ctx.distributed.get_size() == 1
    with pytest.raises(TypeError, match="bool"):
        ctx.set_stop_requested("yes")
    with pytest.raises(TypeError, match="torch.nn.Module"):
        ctx.wrap_model("not a model")
    model = ctx.wrap_model(torch.nn.Linear(2, 2))
    other = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="wrap_optimizer"):
        ctx.wrap_lr_scheduler(torch.optim.lr_scheduler.StepLR(other, 1), None)
