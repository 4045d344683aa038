"""Upstream 0.13's PyTorch data helpers and reductions."""

import numpy as np
import pytest
import torch

from determined import pytorch


def test_batch_samplers_compose_as_upstream():
    base = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(10)), 3, False)
    assert list(pytorch.SkipBatchSampler(base, 2)) == [[6, 7, 8], [9]]
    assert len(pytorch.SkipBatchSampler(base, 2)) == 2
    assert len(pytorch.SkipBatchSampler(base, 2, same_length=True)) == 4
    rep = iter(pytorch.RepeatBatchSampler(base))
    assert [next(rep) for _ in range(5)][-1] == [0, 1, 2]
    dist = pytorch.DistributedBatchSampler(base, num_replicas=2, rank=1)
    assert list(dist) == [[3, 4, 5], [9]] and len(dist) == 2
    adapted = pytorch.adapt_batch_sampler(base, repeat=True, skip=1, num_replicas=2, rank=0)
    it = iter(adapted)
    assert [next(it) for _ in range(3)] == [[6, 7, 8], [0, 1, 2], [6, 7, 8]]
    with pytest.raises(ValueError, match="rank < num_replicas"):
        pytorch.DistributedBatchSampler(base, num_replicas=2, rank=2)


def test_get_data_loader_repeat_skip_shard():
    ds = torch.utils.data.TensorDataset(torch.arange(8).float())
    loader = pytorch.DataLoader(ds, batch_size=2)
    one_pass = [b[0].tolist() for b in loader.get_data_loader()]
    assert one_pass == [[0, 1], [2, 3], [4, 5], [6, 7]]
    it = iter(loader.get_data_loader(repeat=True, skip=3))
    assert [next(it)[0].tolist() for _ in range(3)] == [[6, 7], [0, 1], [2, 3]]
    shard = [b[0].tolist() for b in loader.get_data_loader(num_replicas=2, rank=1)]
    assert shard == [[2, 3], [6, 7]]


def test_data_length_and_to_device(caplog):
    assert pytorch.data_length(torch.zeros(5, 2)) == 5
    assert pytorch.data_length([np.zeros((3, 1)), np.zeros(3)]) == 3
    assert pytorch.data_length({"a": torch.zeros(7)}) == 7
    with pytest.raises(TypeError, match="data_length"):
        pytorch.data_length("text")
    moved = pytorch.to_device({"x": np.ones(2), "n": object()}, torch.device("cpu"),
                              log_warning=True)
    assert isinstance(moved["x"], torch.Tensor)
    assert "to_device: left a object" in caplog.text


def test_reset_parameters_reinitializes_layers():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    before = [p.detach().clone() for p in model.parameters()]
    pytorch.reset_parameters(model)
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_reducer_avg_of_shape_1_values_is_a_scalar():
    from determined.pytorch._reducer import reduce_metric

    values = [torch.tensor([1.0]), torch.tensor([2.0]), torch.tensor([6.0])]
    out = reduce_metric("acc", values, pytorch.Reducer.AVG)
    assert out == pytest.approx(3.0) and isinstance(out, float)
    assert reduce_metric("acc", values, pytorch.Reducer.SUM) == pytest.approx(9.0)
    assert pytorch._reduce_metrics(pytorch.Reducer.AVG, [1.0, 4.0], num_batches=[3, 1]) == 1.75
    assert np.asarray(pytorch._reduce_metrics(pytorch.Reducer.MAX, [[1.0], [4.0]])).shape == ()


def test_public_controller_runs_workloads_by_hand(tmp_path):
    """Upstream's PyTorchTrialController, driven the upstream way: from_trial(...).run()."""
    import pathlib

    import determined as det
    from determined.harness import load_trial_class
    from determined.workload import Workload

    fixture = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "tiny_pytorch"
    trial_class = load_trial_class("model_def:TinyTrial", str(fixture))
    env, rendezvous, hvd = det._make_local_execution_env(
        True, {"hyperparameters": {"global_batch_size": 8, "lr": 0.1, "dropout": 0.0}},
        {"global_batch_size": 8, "lr": 0.1, "dropout": 0.0})
    answers = []
    stream = [(Workload(Workload.Kind.RUN_STEP, 1, 3, 0), [], answers.append),
              (Workload(Workload.Kind.COMPUTE_VALIDATION_METRICS, 1, 0, 3), [], answers.append),
              (Workload(Workload.Kind.CHECKPOINT_MODEL, 1, 0, 3), [tmp_path / "ckpt"],
               answers.append),
              (Workload(Workload.Kind.TERMINATE, 1), [], answers.append)]
    context = pytorch.PyTorchTrialContext(env.to_trial_env())
    trial = trial_class(context)
    ctrl = pytorch.PyTorchTrial.trial_controller_class.from_trial(
        trial, context, env, stream, None, rendezvous, hvd)
    ctrl.run()
    assert len(answers[0]["metrics"]["batch_metrics"]) == 3
    assert "validation_loss" in answers[1]["metrics"]["validation_metrics"]
    assert (tmp_path / "ckpt" / "state_dict.pth").exists()
