"""TFKerasTrial definitions used by tests/keras (tiny models on scikit-learn digits)."""

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits

from determined.keras import SequenceAdapter, TFKerasTensorBoard, TFKerasTrial

N_TRAIN, N_VAL = 320, 160
EVENTS = []  # filled by Recorder in the test process
CACHE_CALLS = []  # one entry per materialised cached dataset


def digits():
    x, y = load_digits(return_X_y=True)
    x, y = (x / 16.0).astype("float32"), y.astype("int64")
    return (x[:N_TRAIN], y[:N_TRAIN]), (x[N_TRAIN:N_TRAIN + N_VAL], y[N_TRAIN:N_TRAIN + N_VAL])


class DigitsSequence(tf.keras.utils.Sequence):
    def __init__(self, x, y, batch_size, weights=None):
        super().__init__()
        self.x, self.y, self.w, self.batch_size = x, y, weights, batch_size

    def __len__(self):
        return int(np.ceil(len(self.x) / self.batch_size))

    def __getitem__(self, i):
        s = slice(i * self.batch_size, (i + 1) * self.batch_size)
        if self.w is not None:
            return self.x[s], self.y[s], self.w[s]
        return self.x[s], self.y[s]


def small_model(context, kind="plain", lr=0.01, dropout=0.0):
    if kind in ("list_inputs", "dict_inputs"):
        a = tf.keras.layers.Input(shape=(32,), name="a")
        b = tf.keras.layers.Input(shape=(32,), name="b")
        h = tf.keras.layers.Concatenate()([a, b])
        h = tf.keras.layers.Dense(16, activation="relu")(h)
        model = tf.keras.Model(inputs=[a, b], outputs=tf.keras.layers.Dense(10)(h))
    else:
        layers = [tf.keras.layers.Input(shape=(64,)), tf.keras.layers.Dense(16, activation="relu")]
        if dropout:
            layers.append(tf.keras.layers.Dropout(dropout))
        model = tf.keras.Sequential(layers + [tf.keras.layers.Dense(10)])
    model = context.wrap_model(model)
    model.compile(
        optimizer=tf.keras.optimizers.Adam(lr),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def make_input(context, kind, x, y, train):
    bs = context.get_per_slot_batch_size()
    if kind == "arrays":
        return x, y
    if kind == "weights":
        return x, y, np.where(y % 2 == 0, 1.0, 0.5).astype("float32")
    if kind == "list_inputs":
        return [x[:, :32], x[:, 32:]], y
    if kind == "dict_inputs":
        return {"a": x[:, :32], "b": x[:, 32:]}, y
    if kind == "dataset":
        return context.wrap_dataset(tf.data.Dataset.from_tensor_slices((x, y))).batch(bs)
    if kind == "dataset_weights":
        w = np.ones(len(y), "float32")
        return context.wrap_dataset(tf.data.Dataset.from_tensor_slices((x, y, w))).batch(bs)
    if kind == "sequence":
        return DigitsSequence(x, y, bs)
    if kind == "sequence_weights":
        return DigitsSequence(x, y, bs, np.ones(len(y), "float32"))
    if kind == "adapter_threads":
        return SequenceAdapter(DigitsSequence(x, y, bs), workers=2, max_queue_size=4)
    if kind == "adapter_processes":
        return SequenceAdapter(DigitsSequence(x, y, bs), workers=1, use_multiprocessing=True)
    if kind == "adapter_main":
        return SequenceAdapter(DigitsSequence(x, y, bs), workers=0)
    if kind == "cached":
        decorate = (context.experimental.cache_train_dataset("digits", "v1", shuffle=True)
                    if train else context.experimental.cache_validation_dataset("digits-val", "v1"))

        def make():
            CACHE_CALLS.append(train)
            return tf.data.Dataset.from_tensor_slices((x, y))

        return decorate(make)().batch(bs)
    raise ValueError(kind)


class LoaderTrial(TFKerasTrial):
    """hparams: loader (input kind), lr, dropout."""

    def __init__(self, context):
        self.context = context
        self.kind = context.get_hparam("loader")
        (self.x, self.y), (self.vx, self.vy) = digits()

    def build_model(self):
        return small_model(self.context, self.kind, self.context.get_hparam("lr"),
                           self.context.get_hparams().get("dropout", 0.0))

    def build_training_data_loader(self):
        return make_input(self.context, self.kind, self.x, self.y, True)

    def build_validation_data_loader(self):
        return make_input(self.context, self.kind, self.vx, self.vy, False)


class Recorder(tf.keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        EVENTS.append(("train_begin",))

    def on_epoch_begin(self, epoch, logs=None):
        EVENTS.append(("epoch_begin", epoch))

    def on_epoch_end(self, epoch, logs=None):
        EVENTS.append(("epoch_end", epoch, dict(logs or {})))

    def on_train_batch_begin(self, batch, logs=None):
        EVENTS.append(("batch_begin", batch))

    def on_train_batch_end(self, batch, logs=None):
        EVENTS.append(("batch_end", batch, dict(logs or {})))

    def on_test_begin(self, logs=None):
        EVENTS.append(("test_begin",))

    def on_test_batch_end(self, batch, logs=None):
        EVENTS.append(("test_batch_end", batch))

    def on_test_end(self, logs=None):
        EVENTS.append(("test_end", dict(logs or {})))

    def on_train_end(self, logs=None):
        EVENTS.append(("train_end",))


class StopAfterFirstEpoch(tf.keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        self.model.stop_training = True


class CallbackTrial(LoaderTrial):
    def keras_callbacks(self):
        callbacks = [Recorder()]
        if self.context.get_hparams().get("stop"):
            callbacks.append(StopAfterFirstEpoch())
        if self.context.get_hparams().get("tensorboard"):
            callbacks.append(TFKerasTensorBoard(log_dir="/ignored", update_freq="batch"))
        return callbacks


class SubclassedModel(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = tf.keras.layers.Dense(16, activation="relu")
        self.out = tf.keras.layers.Dense(10)

    def call(self, x, training=False):
        return self.out(self.hidden(x))


class SubclassedTrial(LoaderTrial):
    def build_model(self):
        model = self.context.wrap_model(SubclassedModel())
        model.compile(tf.keras.optimizers.Adam(0.01),
                      tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        return model


class GraphModeTrial(LoaderTrial):
    """Runs with eager execution disabled (must run in its own process)."""

    def __init__(self, context):
        tf.compat.v1.disable_eager_execution()
        super().__init__(context)

    def build_model(self):
        model = self.context.wrap_model(
            tf.keras.Sequential([tf.keras.layers.Input(shape=(64,)),
                                 tf.keras.layers.Dense(16, activation="relu"),
                                 tf.keras.layers.Dense(10)])
        )
        optimizer = (tf.keras.optimizers.Adam if self.context.get_hparams().get("new_optimizer")
                     else tf.keras.optimizers.legacy.Adam)(self.context.get_hparam("lr"))
        model.compile(optimizer, tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        return model


# ---------------------------------------------------------------- broken trials


class UnwrappedModelTrial(LoaderTrial):
    def build_model(self):
        model = tf.keras.Sequential([tf.keras.layers.Input((64,)), tf.keras.layers.Dense(10)])
        model.compile("adam", "sparse_categorical_crossentropy")
        return model


class UncompiledModelTrial(LoaderTrial):
    def build_model(self):
        return self.context.wrap_model(
            tf.keras.Sequential([tf.keras.layers.Input((64,)), tf.keras.layers.Dense(10)])
        )


class NotAModelTrial(LoaderTrial):
    def build_model(self):
        return "model"


class WrongLoaderTrial(LoaderTrial):
    def build_training_data_loader(self):
        return [self.x, self.y]


class ThreeTupleWrongTrial(LoaderTrial):
    def build_training_data_loader(self):
        return self.x, self.y, self.y, self.y


class UnwrappedDatasetTrial(LoaderTrial):
    def build_training_data_loader(self):
        return tf.data.Dataset.from_tensor_slices((self.x, self.y)).batch(32)


class BadCallbacksTrial(LoaderTrial):
    def keras_callbacks(self):
        return ["not a callback"]


class RaisingModelTrial(LoaderTrial):
    def build_model(self):
        raise RuntimeError("boom in build_model")
