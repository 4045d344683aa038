"""Runs a :class:`TFKerasTrial` under the trial runner.

Who owns what: the trial builds the compiled model, the two inputs and the
callbacks; the loaders (``_data``) turn inputs into batches and know epoch
lengths; ``_loop`` runs one batch through the model; this controller owns the
data position (epoch, batch within it), drives the Keras ``CallbackList`` by
hand (epochs follow the training loader's length, not workloads) and writes
checkpoints (``_checkpoint``).
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any, Dict, Iterator, List, Optional, Type

import tensorflow as tf

from determined.errors import CheckpointError, InvalidTrialError
from determined.harness import TrialController, TrialEnv, describe_class, user_code_error
from determined.keras import _checkpoint
from determined.keras._context import TFKerasTrialContext
from determined.keras._data import Loader, batch_size_of, make_loader
from determined.keras._loop import KerasLoop
from determined.keras._tensorboard import TFKerasTensorBoard
from determined.tensorflow._common import framework_name, require_single_slot
from determined.tensorflow._metrics import average_metrics, to_python
from determined.tensorflow._rng import load_rng_state, save_rng_state, seed_all

__all__ = ["TFKerasTrialController"]

logger = logging.getLogger("determined")

STATE_FILE = "determined-keras-state.json"


class TFKerasTrialController(TrialController):
    checkpoint_format = "h5"

    def __init__(self, trial_class: Type[Any], env: TrialEnv):
        super().__init__(trial_class, env)
        self.framework = framework_name()
        require_single_slot(env, trial_class)
        seed_all(env.trial_seed)
        self._context = TFKerasTrialContext(env)
        self.trial = self._call("__init__", lambda: trial_class(self._context))
        self.eager = tf.executing_eagerly()
        if not self.eager:  # the trial disabled eager execution: seed the graph too
            tf.compat.v1.set_random_seed(env.trial_seed)
        self._apply_session_config()

        self.model = self._build_model()
        batch_size = self._context.get_per_slot_batch_size()
        rank, size = env.distributed.rank, env.distributed.size
        self.train_loader = self._build_loader("build_training_data_loader", "train",
                                               batch_size, rank, size)
        self.val_loader = self._build_loader("build_validation_data_loader", "validation",
                                             batch_size, rank, size)
        self.loop = KerasLoop(self.model)
        self.callbacks = self._build_callbacks()

        self.epoch = 0
        self.batch_in_epoch = 0
        self._batches: Optional[Iterator[Any]] = None
        self._epoch_logs: List[Dict[str, Any]] = []
        self._val_logs: Dict[str, Any] = {}
        self._train_begun = False

    @property
    def context(self) -> TFKerasTrialContext:
        return self._context

    # ------------------------------------------------------------------ building

    def _where(self, method: str) -> str:
        return f"{describe_class(self.trial_class)}.{method}"

    def _call(self, method: str, fn: Any) -> Any:
        try:
            return fn()
        except Exception as e:  # InvalidTrialErrors get the class and method prepended
            raise user_code_error(e, self.trial_class, method) from None

    def _apply_session_config(self) -> None:
        config = self._call("session_config", self.trial.session_config)
        if config is None:
            return
        if not self.eager:
            tf.compat.v1.keras.backend.set_session(tf.compat.v1.Session(config=config))
            return
        try:
            if config.intra_op_parallelism_threads:
                tf.config.threading.set_intra_op_parallelism_threads(config.intra_op_parallelism_threads)
            if config.inter_op_parallelism_threads:
                tf.config.threading.set_inter_op_parallelism_threads(config.inter_op_parallelism_threads)
        except RuntimeError:
            logger.debug("TensorFlow already started; session_config thread counts not applied")

    def _build_model(self) -> Any:
        model = self._call("build_model", self.trial.build_model)
        where = self._where("build_model")
        if not isinstance(model, tf.keras.Model):
            raise InvalidTrialError(
                f"{where} must return a tf.keras.Model. Received: {type(model).__name__}"
            )
        if not self._context._is_wrapped(model):
            raise InvalidTrialError(
                f"{where} returned a model that was not wrapped: call "
                "model = self.context.wrap_model(model) right after creating the model and "
                "before model.compile()"
            )
        if getattr(model, "optimizer", None) is None or not getattr(model, "_is_compiled", True):
            raise InvalidTrialError(
                f"{where} returned a model that is not compiled: call "
                "model.compile(optimizer=..., loss=..., metrics=[...]) before returning it"
            )
        if not self.eager:
            self._use_legacy_optimizer(model, where)
        return model

    def _use_legacy_optimizer(self, model: Any, where: str) -> None:
        """Keras 2.15's graph-mode engine only drives tf.keras.optimizers.legacy optimizers."""
        optimizer = model.optimizer
        if not isinstance(optimizer, tf.keras.optimizers.legacy.Optimizer):
            raise InvalidTrialError(
                f"{where}: with eager execution disabled, Keras 2 needs a "
                f"tf.keras.optimizers.legacy optimizer in model.compile() (e.g. "
                f"tf.keras.optimizers.legacy.{type(optimizer).__name__}). "
                f"Received: {type(optimizer).__module__}.{type(optimizer).__name__}"
            )

    def _build_loader(self, method: str, role: str, batch_size: int, rank: int, size: int) -> Loader:
        before = self._context._dataset_usage()
        data = self._call(method, getattr(self.trial, method))
        after = self._context._dataset_usage()
        where = self._where(method)
        if isinstance(data, tf.data.Dataset):
            wrapped = after["wrapped"] > before["wrapped"]
            cached = after["cache"][role] and not before["cache"][role]
            if not (wrapped or cached):
                raise InvalidTrialError(
                    f"{where} returned a tf.data.Dataset that was not wrapped: call "
                    "dataset = self.context.wrap_dataset(dataset) right after creating it "
                    f"(or build it with context.experimental.cache_{role}_dataset)"
                )
        loader = make_loader(data, where, batch_size, rank, size)
        if role == "validation" and loader.endless:
            raise InvalidTrialError(
                f"{where} returned a Python generator with no end; validation needs a finite "
                "input (a Sequence, arrays, a tf.data.Dataset, or validation_steps in the "
                "Native API)"
            )
        return loader

    def _build_callbacks(self) -> Any:
        user = self._call("keras_callbacks", self.trial.keras_callbacks)
        if user is None:
            user = []
        if not isinstance(user, (list, tuple)) or not all(
            isinstance(cb, tf.keras.callbacks.Callback) for cb in user
        ):
            raise InvalidTrialError(
                f"{self._where('keras_callbacks')} must return a list of "
                f"tf.keras.callbacks.Callback objects. Received: {user!r}"
            )
        for cb in user:
            if isinstance(cb, TFKerasTensorBoard):
                cb._set_determined_rank(self.env.distributed.rank)
        return tf.keras.callbacks.CallbackList(
            list(user), add_history=True, add_progbar=False, model=self.model,
            verbose=0, epochs=None, steps=self.train_loader.length,
        )

    def _callback(self, hook: str, *args: Any) -> None:
        try:
            getattr(self.callbacks, hook)(*args)
        except Exception as e:
            raise user_code_error(e, self.trial_class, f"keras_callbacks() {hook}") from None

    # ------------------------------------------------------------------ training

    def train(self, num_batches: int, batches_trained: int) -> Dict[str, Any]:
        if not self._train_begun:
            self.model.stop_training = False
            self._callback("on_train_begin")
            self._train_begun = True
        batch_metrics: List[Dict[str, Any]] = []
        num_inputs = 0
        while len(batch_metrics) < num_batches:
            if self._batches is None:
                if self.batch_in_epoch == 0:
                    self._epoch_logs = []
                    self._callback("on_epoch_begin", self.epoch)
                self._batches = self.train_loader.epoch(self.batch_in_epoch)
            try:
                batch = next(self._batches)
            except StopIteration:
                if self.batch_in_epoch == 0:
                    raise InvalidTrialError(
                        f"{self._where('build_training_data_loader')} returned no batches"
                    ) from None
                self._end_epoch()
                continue
            self._callback("on_train_batch_begin", self.batch_in_epoch)
            logs = self._call("build_model (train_step)", lambda: self.loop.train_batch(batch))
            num_inputs += batch_size_of(batch)
            batch_metrics.append(logs)
            self._epoch_logs.append(logs)
            self.batch_in_epoch += 1
            self._callback("on_train_batch_end", self.batch_in_epoch - 1, dict(logs))
            if self.train_loader.length is not None and self.batch_in_epoch >= self.train_loader.length:
                self._end_epoch()
            self._check_stop()
        return {
            "batch_metrics": batch_metrics,
            "avg_metrics": average_metrics(batch_metrics),
            "num_inputs": num_inputs,
        }

    def _end_epoch(self) -> None:
        logs = {k: v for k, v in average_metrics(self._epoch_logs).items() if v is not None}
        logs.update(self._val_logs)
        self._val_logs = {}
        self._callback("on_epoch_end", self.epoch, logs)
        self.train_loader.end_epoch()
        self.epoch += 1
        self.batch_in_epoch = 0
        self._batches = None
        self._check_stop()

    def _check_stop(self) -> None:
        if getattr(self.model, "stop_training", False):
            self._context.set_stop_requested(True)

    # ------------------------------------------------------------------ validation

    def validate(self, batches_trained: int) -> Dict[str, Any]:
        self._callback("on_test_begin")
        self.loop.reset_metrics()
        logs: Any = None
        num_inputs = 0
        for i, batch in enumerate(self.val_loader.epoch(0)):
            self._callback("on_test_batch_begin", i)
            logs = self._call("build_model (test_step)", lambda: self.loop.test_batch(batch))
            num_inputs += batch_size_of(batch)
            self._callback("on_test_batch_end", i, logs)
        if logs is None:
            raise InvalidTrialError(
                f"{self._where('build_validation_data_loader')} returned no batches"
            )
        results = to_python(logs)
        self.loop.reset_metrics()
        self._callback("on_test_end", dict(results))
        metrics = {f"val_{k}": v for k, v in results.items()}
        self._val_logs = dict(metrics)
        return {"validation_metrics": metrics, "num_inputs": num_inputs}

    # ------------------------------------------------------------------ checkpoints

    def save(self, path: str, batches_trained: int) -> None:
        _checkpoint.save_model(self.model, os.path.join(path, _checkpoint.MODEL_FILE))
        with open(os.path.join(path, STATE_FILE), "w") as f:
            json.dump(
                {"batches_trained": batches_trained, "epoch": self.epoch,
                 "batch_in_epoch": self.batch_in_epoch, "eager": self.eager},
                f,
            )
        save_rng_state(path)

    def load(self, path: str, weights_only: bool = False) -> int:
        model_file = os.path.join(path, _checkpoint.MODEL_FILE)
        if not os.path.exists(model_file):
            raise CheckpointError(f"{path} holds no Keras checkpoint ({_checkpoint.MODEL_FILE})")
        self._ensure_built()
        _checkpoint.load_model_weights(self.model, model_file)
        _checkpoint.load_optimizer_state(self.model, model_file)
        load_rng_state(path)  # a warm start too: the source's random streams go on (0.13)
        if weights_only:
            return 0
        state_file = os.path.join(path, STATE_FILE)
        if not os.path.exists(state_file):
            raise CheckpointError(f"{path} lacks {STATE_FILE}; it cannot resume a trial")
        with open(state_file) as f:
            state = json.load(f)
        self.epoch = int(state["epoch"])
        self.batch_in_epoch = int(state["batch_in_epoch"])
        if self.batch_in_epoch and not self.train_loader.resumable:
            logger.info(
                "the training input cannot resume mid-epoch (tf.data or a generator); "
                "epoch %d restarts from its first batch", self.epoch,
            )
            self.batch_in_epoch = 0
        self._batches = None
        return int(state["batches_trained"])

    def _ensure_built(self) -> None:
        """Subclassed models create their variables on first call; call them once."""
        if self.model.built:
            return
        batch = next(iter(self.val_loader.epoch(0)))
        x, _, _ = tf.keras.utils.unpack_x_y_sample_weight(
            tuple(batch) if isinstance(batch, list) else batch
        )
        self.model(x, training=False)

    def close(self) -> None:
        try:
            if self._train_begun:
                self._callback("on_train_end")
        finally:
            self.train_loader.close()
            self.val_loader.close()
