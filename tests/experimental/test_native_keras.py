"""The Native API for tf.keras: ``init()`` then plain Keras code."""

import http.server
import os
import socket
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

import determined.experimental.keras as det_keras  # noqa: E402
from determined.errors import InvalidModelDefError, InvalidTrialError, MasterError  # noqa: E402
from determined.experimental._native import Mode  # noqa: E402


def digits():
    x, y = load_digits(return_X_y=True)
    x, y = (x / 16.0).astype("float32"), y.astype("int64")
    return (x[:320], y[:320]), (x[320:480], y[320:480])


def config(tmp_path, batches=60, **extra):
    cfg = {
        "hyperparameters": {"global_batch_size": 32, "hidden": 16},
        "searcher": {"name": "single", "metric": "val_accuracy", "smaller_is_better": False,
                     "max_length": {"batches": batches}},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(tmp_path / "ckpts")},
        "reproducibility": {"experiment_seed": 5},
    }
    cfg.update(extra)
    return cfg


def model_for(context):
    model = context.wrap_model(tf.keras.Sequential([
        tf.keras.layers.Input(shape=(64,)),
        tf.keras.layers.Dense(context.get_hparam("hidden"), activation="relu"),
        tf.keras.layers.Dense(10),
    ]))
    model.compile(tf.keras.optimizers.Adam(0.02),
                  tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


@pytest.fixture
def context_dir(tmp_path):
    path = tmp_path / "context"
    path.mkdir()
    (path / "script.py").write_text("# the user's script\n")
    return str(path)


def test_local_mode_trains_for_the_searcher_length(tmp_path, context_dir):
    context = det_keras.init(config(tmp_path), mode=Mode.LOCAL, context_dir=context_dir)
    assert context.get_hparam("hidden") == 16
    model = model_for(context)
    (x, y), val = digits()
    history = model.fit(x, y, validation_data=val, epochs=99, batch_size=32)
    host = context.last_run
    assert [b for b, _ in host.training] == [60]
    (batches, metrics), = host.validations
    assert batches == 60 and metrics["validation_metrics"]["val_accuracy"] > 0.6
    assert len(history.history["loss"]) == 6  # 10-batch epochs of the arrays
    assert history.history["loss"][-1] < history.history["loss"][0]
    uuid = host.checkpoints[-1][1]
    ckpt = tmp_path / "ckpts" / uuid
    assert (ckpt / "determined-keras-model.h5").exists()
    assert (ckpt / "code" / "script.py").exists()
    # the user's model object itself was trained
    assert model.optimizer.iterations.numpy() == 60


@pytest.mark.parametrize("kind", ["dataset", "sequence", "generator"])
def test_local_mode_other_inputs(kind, tmp_path, context_dir):
    context = det_keras.init(config(tmp_path, batches=30), mode="local", context_dir=context_dir)
    model = model_for(context)
    (x, y), (vx, vy) = digits()
    if kind == "dataset":
        model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(32),
                  validation_data=tf.data.Dataset.from_tensor_slices((vx, vy)).batch(32))
    elif kind == "sequence":
        class Seq(tf.keras.utils.Sequence):
            def __init__(self, a, b):
                super().__init__()
                self.a, self.b = a, b

            def __len__(self):
                return len(self.a) // 32

            def __getitem__(self, i):
                return self.a[i * 32:(i + 1) * 32], self.b[i * 32:(i + 1) * 32]

        model.fit(Seq(x, y), validation_data=Seq(vx, vy), workers=2)
    else:
        def batches(a, b):
            while True:
                for i in range(0, len(a), 32):
                    yield a[i:i + 32], b[i:i + 32]

        model.fit_generator(batches(x, y), steps_per_epoch=10,
                            validation_data=batches(vx, vy), validation_steps=5)
    (batches_done, metrics), = context.last_run.validations
    assert batches_done == 30
    assert metrics["num_inputs"] == 160


def test_test_mode_is_a_minimal_loop(tmp_path, context_dir):
    context = det_keras.init(config(tmp_path, batches=500, scheduling_unit=7),
                             local=True, test=True, context_dir=context_dir)
    model = model_for(context)
    (x, y), val = digits()
    model.fit(x, y, validation_data=val)
    host = context.last_run
    assert [b for b, _ in host.training] == [7]
    assert len(host.validations) == 1 and len(host.checkpoints) == 1


def test_local_without_test_is_not_supported(tmp_path):
    with pytest.raises(NotImplementedError, match="test=True"):
        det_keras.init(config(tmp_path), local=True, test=False)


def test_fit_needs_validation_data(tmp_path, context_dir):
    context = det_keras.init(config(tmp_path), mode=Mode.LOCAL, context_dir=context_dir)
    model = model_for(context)
    (x, y), _ = digits()
    with pytest.raises(InvalidTrialError, match="validation_data"):
        model.fit(x, y)
    model.fit(x, y, validation_split=0.25)
    assert context.last_run.validations[0][1]["num_inputs"] == 80


def test_cluster_mode_without_a_master(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(MasterError, match=f"no Determined master is reachable at {url}"):
        det_keras.init(config(tmp_path), master_url=url)


def test_cluster_mode_uses_det_master(tmp_path, monkeypatch):
    class Handler(http.server.BaseHTTPRequestHandler):
        paths = []

        def do_GET(self):
            Handler.paths.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("DET_MASTER", f"127.0.0.1:{server.server_port}")
        with pytest.raises(InvalidModelDefError, match="context_dir is required"):
            det_keras.init(config(tmp_path), mode=Mode.CLUSTER)
    finally:
        server.shutdown()
    assert Handler.paths == ["/api/v1/master"]


def test_stop_training_in_native_fit(tmp_path, context_dir):
    class Stop(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.stop_training = True

    context = det_keras.init(config(tmp_path, batches=200, scheduling_unit=20),
                             mode=Mode.LOCAL, context_dir=context_dir)
    model = model_for(context)
    (x, y), val = digits()
    model.fit(x, y, validation_data=val, callbacks=[Stop()])
    host = context.last_run
    assert host.early_exit == "user_requested_stop"
    assert [b for b, _ in host.training] == [20]


@pytest.fixture(autouse=True)
def _tensorboard_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("DET_TENSORBOARD_DIR", str(tmp_path_factory.mktemp("tensorboard")))
