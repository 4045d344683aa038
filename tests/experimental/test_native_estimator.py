"""The Native API for tf.estimator: ``init()`` then ``context.train_and_evaluate``."""

import os
import socket

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

import determined.experimental.estimator as det_estimator  # noqa: E402
from determined.errors import MasterError  # noqa: E402
from determined.experimental._native import Mode  # noqa: E402

tf.get_logger().setLevel("ERROR")


def config(tmp_path, batches=40, **extra):
    cfg = {
        "hyperparameters": {"global_batch_size": 32, "lr": 0.03},
        "searcher": {"name": "single", "metric": "accuracy", "smaller_is_better": False,
                     "max_length": {"batches": batches}},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(tmp_path / "ckpts")},
        "reproducibility": {"experiment_seed": 5},
    }
    cfg.update(extra)
    return cfg


def specs(context):
    x, y = load_digits(return_X_y=True)
    x, y = (x / 16.0).astype("float32"), y.astype("int64")

    def model_fn(features, labels, mode):
        logits = tf.compat.v1.layers.dense(features["x"], 10)
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        if mode == tf.estimator.ModeKeys.TRAIN:
            opt = context.wrap_optimizer(tf.compat.v1.train.AdamOptimizer(context.get_hparam("lr")))
            op = opt.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
            return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=op)
        classes = tf.argmax(logits, 1)
        correct = tf.cast(tf.equal(classes, labels), tf.float32)
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
            "accuracy": tf.compat.v1.metrics.accuracy(labels, classes),
            "mean_correct": context.experimental.make_metric(
                correct, lambda b: float(np.mean(np.concatenate(b))), np.float32),
        })

    def input_fn(lo, hi):
        return lambda: context.wrap_dataset(
            tf.data.Dataset.from_tensor_slices(({"x": x[lo:hi]}, y[lo:hi]))).batch(32)

    return (tf.estimator.Estimator(model_fn), tf.estimator.TrainSpec(input_fn(0, 320)),
            tf.estimator.EvalSpec(input_fn(320, 480), steps=None))


def test_local_test_mode(tmp_path):
    (tmp_path / "ctx").mkdir()
    context = det_estimator.init(config(tmp_path, scheduling_unit=10), local=True, test=True,
                                 context_dir=str(tmp_path / "ctx"))
    host = context.train_and_evaluate(*specs(context))
    assert [b for b, _ in host.training] == [10]
    metrics = host.validations[0][1]["validation_metrics"]
    assert metrics["global_step"] == 10
    assert metrics["mean_correct"] == pytest.approx(metrics["accuracy"], abs=1e-6)
    assert host.checkpoints[-1][2]["format"] == "saved_model"


def test_mode_local_trains_the_searcher_length(tmp_path):
    (tmp_path / "ctx").mkdir()
    context = det_estimator.init(config(tmp_path, batches=40), mode=Mode.LOCAL,
                                 context_dir=str(tmp_path / "ctx"))
    host = context.train_and_evaluate(*specs(context))
    assert [b for b, _ in host.training] == [40]
    assert host.validations[0][1]["validation_metrics"]["accuracy"] > 0.6


def test_cluster_mode_without_a_master(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(MasterError, match="no Determined master is reachable"):
        det_estimator.init(config(tmp_path), master_url=f"127.0.0.1:{port}")


def test_local_without_test_is_not_supported(tmp_path):
    with pytest.raises(NotImplementedError, match="test=True"):
        det_estimator.init(config(tmp_path), local=True)


def test_checkpoints_inside_the_context_dir_are_refused(tmp_path):
    from determined.errors import InvalidConfigError

    with pytest.raises(InvalidConfigError, match="inside the context directory"):
        det_estimator.init(config(tmp_path), local=True, test=True, context_dir=str(tmp_path))


@pytest.fixture(autouse=True)
def _tensorboard_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("DET_TENSORBOARD_DIR", str(tmp_path_factory.mktemp("tensorboard")))
