"""Every trial writes TensorBoard event files with upstream's tags, synced to storage."""

import os
import subprocess
import sys

import pytest

from determined.common.identity import directory_id
from determined.tensorboard import SharedFSTensorboardManager, trial_sync_path
from determined.tensorboard.metric_writers import BatchMetricWriter
from determined.tensorboard.metric_writers._event_file import EventFileWriter

from det_cli_testing import run_det
from tb_testing import scalars


def test_batch_metric_writer_uses_upstream_tags(tmp_path):
    writer = EventFileWriter(str(tmp_path))
    metrics = BatchMetricWriter(writer)
    metrics.on_train_step_end(1, 2, 10, {"batch_metrics": [{"loss": 0.5, "name": "x"},
                                                           {"loss": 0.25, "name": "y"}]})
    metrics.on_validation_step_end(1, 12, {"validation_loss": 0.1, "accuracy": 0.9,
                                           "matrix": [[1, 2]]})
    writer.close()
    got = scalars(str(tmp_path))
    assert got == {"Determined/loss": [(11, 0.5), (12, 0.25)],
                   "Determined/validation_loss": [(12, pytest.approx(0.1))],
                   "Determined/val_accuracy": [(12, pytest.approx(0.9))]}


def test_sync_copies_new_and_grown_files_only(tmp_path):
    base, storage = tmp_path / "local", tmp_path / "storage"
    writer = EventFileWriter(str(base))
    writer.add_scalar("a", 1.0, 1)
    writer.reset()
    manager = SharedFSTensorboardManager(str(storage), str(base), trial_sync_path(3, 7))
    assert len(manager.to_sync()) == 1
    manager.sync()
    assert manager.to_sync() == []
    writer.add_scalar("a", 2.0, 2)
    writer.reset()
    assert len(manager.to_sync()) == 1
    manager.sync()
    target = storage / "tensorboard" / "experiment" / "3" / "trial" / "7"
    assert scalars(str(target)) == {"a": [(1, 1.0), (2, 2.0)]}


def test_torch_writer_does_not_import_tensorflow(tmp_path):
    code = (
        "import os, sys\n"
        f"os.environ['DET_TENSORBOARD_DIR'] = {str(tmp_path)!r}\n"
        "from determined.tensorboard.metric_writers.pytorch import TorchWriter\n"
        "w = TorchWriter(); w.add_scalar('x', 3.0, 5); import torch; w.writer.add_histogram('h', torch.tensor([1.0, 2.0]), 5)\n"
        "w.reset()\n"
        "print('tensorflow' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    assert scalars(str(tmp_path))["x"] == [(5, 3.0)]


def test_local_pytorch_trial_syncs_event_files_to_checkpoint_storage(tmp_path, tiny_dir):
    out = run_det(["experiment", "create", tiny_dir / "const.yaml", tiny_dir, "--local",
                   "--local-dir", tmp_path / "local"], timeout=300)
    assert out.returncode == 0, out.stderr
    # Under the local directory's owner id: another local directory (or a master)
    # sharing the storage has an experiment 1, trial 1 too.
    tensorboard = tmp_path / "local" / "checkpoints" / "tensorboard"
    assert os.listdir(tensorboard) == [directory_id(str(tmp_path / "local"))]
    root = tensorboard / directory_id(str(tmp_path / "local")) / "experiment"
    (exp_dir,) = os.listdir(root)
    (trial_dir,) = os.listdir(root / exp_dir / "trial")
    got = scalars(str(root / exp_dir / "trial" / trial_dir))
    assert [step for step, _ in got["Determined/loss"]] == list(range(1, 41))
    assert [step for step, _ in got["Determined/validation_loss"]] == [20, 40]


@pytest.mark.parametrize("step", [0, 1, 127, 128, 300, 16383, 16384, 2**21 - 1, 2**21, 2**40, -5])
def test_scalar_events_encode_as_tensorboards_protobufs(step):
    from tensorboard.compat.proto import event_pb2, summary_pb2

    from determined.tensorboard._events import encode_scalar_event

    values = [("Determined/zero", 0.0), ("Determined/loss", 0.25), ("Determined/é" + "x" * 200, -3.5e10)]
    expected = event_pb2.Event(wall_time=1795.5, step=step, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag=t, simple_value=v) for t, v in values]))
    assert encode_scalar_event(step, 1795.5, values) == expected.SerializeToString()


def test_events_written_at_once_are_the_events_written_one_by_one(tmp_path):
    from determined.tensorboard._events import ScalarEventWriter

    events = [(step, [("Determined/loss", step / 7), ("Determined/lr", 0.5)])
              for step in (1, 127, 128, 16384, 2**21, 2**40)] + [(0, [("Determined/x", -1.0)])]
    one_by_one = ScalarEventWriter(str(tmp_path / "a"))
    for step, values in events:
        one_by_one.add_scalars(step, values, wall_time=1795.5)
    one_by_one.close()
    at_once = ScalarEventWriter(str(tmp_path / "b"))
    at_once.add_events(events, wall_time=1795.5)
    at_once.close()
    a, b = (open(w.path, "rb").read() for w in (one_by_one, at_once))
    version_record = 12 + 24 + 4  # header, the file version event, its CRC
    assert len(a) > version_record and a[version_record:] == b[version_record:]
    assert scalars(str(tmp_path / "b"))["Determined/loss"] == [
        (step, pytest.approx(step / 7)) for step, _ in events[:-1]]


def test_trial_tensorboard_syncs_after_validations_and_at_close(tmp_path):
    from determined.tensorboard import TrialTensorboard

    base, storage = tmp_path / "local", tmp_path / "storage"
    manager = SharedFSTensorboardManager(str(storage), str(base), trial_sync_path(1, 2))
    tb = TrialTensorboard(str(base), manager)
    target = str(storage / "tensorboard" / "experiment" / "1" / "trial" / "2")
    tb.training(0, 1, {"batch_metrics": [{"loss": 1.0}]})
    assert scalars(target) == {}  # within sync_period: not yet
    tb.validation(1, {"validation_loss": 0.5})
    assert scalars(target) == {"Determined/loss": [(1, 1.0)],
                               "Determined/validation_loss": [(1, 0.5)]}
    tb.training(1, 1, {"batch_metrics": [{"loss": 0.75}]})
    tb.close()  # appended to the synced file
    assert scalars(target)["Determined/loss"] == [(1, 1.0), (2, 0.75)]
    assert len(os.listdir(target)) == 1
