"""Runs a :class:`TensorFlowTrial`: the platform builds one graph and owns its session.

Who owns what: ``make_data_loaders`` (user module) owns the datasets; the trial
owns the model graph and optimizer; this controller owns the graph, the
session, a feedable iterator switching between the two datasets, the training
data position (epoch and batch within it) and the ``tf.compat.v1.train.Saver``
checkpoints.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any, Dict, List, Type

from determined.errors import CheckpointError, InvalidModelDefError, InvalidTrialError
from determined.harness import TrialController, TrialEnv, describe_class, user_code_error
from determined.tensorflow._common import framework_name, require_single_slot
from determined.tensorflow._context import TensorFlowTrialContext
from determined.tensorflow._metrics import average_metrics, to_python
from determined.tensorflow._rng import load_rng_state, save_rng_state, seed_all

__all__ = ["TensorFlowTrialController"]

logger = logging.getLogger("determined")

STATE_FILE = "determined-tensorflow-state.json"
CHECKPOINT_PREFIX = "model.ckpt"


class TensorFlowTrialController(TrialController):
    checkpoint_format = "tf_checkpoint"

    def __init__(self, trial_class: Type[Any], env: TrialEnv):
        super().__init__(trial_class, env)
        import tensorflow as tf

        self._tf = tf
        self.framework = framework_name()
        require_single_slot(env, trial_class)
        seed_all(env.trial_seed)
        self._context = TensorFlowTrialContext(env)
        self.trial = self._call("__init__", lambda: trial_class(self._context))
        make_data_loaders = self._find_make_data_loaders()
        self.epoch = 0
        self.batch_in_epoch = 0
        self._train_started = False

        self.graph = tf.Graph()
        with self.graph.as_default():
            tf.compat.v1.set_random_seed(env.trial_seed)
            train_ds, val_ds = self._make_datasets(make_data_loaders)
            self._build(train_ds, val_ds)
        self.session = tf.compat.v1.Session(
            graph=self.graph, config=self._call("session_config", self.trial.session_config)
        )
        self.session.run(self._init_ops)
        self._train_handle, self._val_handle = self.session.run(self._handle_ops)
        self.graph.finalize()

    @property
    def context(self) -> TensorFlowTrialContext:
        return self._context

    # ------------------------------------------------------------------ building

    def _call(self, method: str, fn: Any) -> Any:
        try:
            return fn()
        except Exception as e:  # InvalidTrialErrors get the class and method prepended
            raise user_code_error(e, self.trial_class, method) from None

    def _where(self, method: str) -> str:
        return f"{describe_class(self.trial_class)}.{method}"

    def _find_make_data_loaders(self) -> Any:
        module = sys.modules.get(self.trial_class.__module__)
        fn = getattr(module, "make_data_loaders", None)
        if not callable(fn):
            path = getattr(module, "__file__", self.trial_class.__module__)
            raise InvalidModelDefError(
                f"{path}: a TensorFlowTrial's module must define "
                "make_data_loaders(experiment_config, hparams) returning "
                "(train_dataset, validation_dataset)"
            )
        return fn

    def _make_datasets(self, make_data_loaders: Any) -> Any:
        tf = self._tf
        env = self.env
        try:
            result = make_data_loaders(dict(env.experiment_config), dict(env.hparams))
        except Exception as e:
            module = sys.modules.get(self.trial_class.__module__)
            err = user_code_error(e, self.trial_class, "make_data_loaders")
            raise type(err)(
                f"{os.path.basename(getattr(module, '__file__', '?'))}: make_data_loaders raised "
                f"{type(e).__name__}: {e}", err.user_traceback,
            ) from None
        if (
            not isinstance(result, (tuple, list)) or len(result) != 2
            or not all(isinstance(d, tf.data.Dataset) for d in result)
        ):
            got = (
                f"({', '.join(type(d).__name__ for d in result)})"
                if isinstance(result, (tuple, list)) else type(result).__name__
            )
            raise InvalidTrialError(
                "make_data_loaders must return a pair of batched tf.data.Dataset objects "
                f"(train, validation). Received: {got}"
            )
        return result

    def _build(self, train_ds: Any, val_ds: Any) -> None:
        tf = self._tf
        data = tf.compat.v1.data
        types, val_types = data.get_output_types(train_ds), data.get_output_types(val_ds)
        classes = data.get_output_classes(train_ds)
        try:
            tf.nest.assert_same_structure(types, val_types)
            same = all(a == b for a, b in zip(tf.nest.flatten(types), tf.nest.flatten(val_types)))
            shapes = tf.nest.map_structure(
                lambda a, b: a.most_specific_compatible_shape(b),
                data.get_output_shapes(train_ds), data.get_output_shapes(val_ds),
            )
        except (ValueError, TypeError):
            same = False
        if not same:
            raise InvalidTrialError(
                "make_data_loaders must return training and validation datasets with the same "
                f"element structure and types. Received: train={types}, validation={val_types}"
            )
        self._skip = tf.compat.v1.placeholder_with_default(tf.constant(0, tf.int64), shape=[])
        self._train_iter = data.make_initializable_iterator(train_ds.skip(self._skip))
        self._val_iter = data.make_initializable_iterator(val_ds)
        self._handle = tf.compat.v1.placeholder(tf.string, shape=[])
        iterator = data.Iterator.from_string_handle(self._handle, types, shapes, classes)
        record = iterator.get_next()
        self._is_training = tf.compat.v1.placeholder_with_default(False, shape=[], name="is_training")

        outputs = self._call("build_graph", lambda: self.trial.build_graph(record, self._is_training))
        if not isinstance(outputs, dict) or "loss" not in outputs:
            keys = ", ".join(map(str, outputs)) if isinstance(outputs, dict) else type(outputs).__name__
            raise InvalidTrialError(
                f"{self._where('build_graph')} must return a dict of tensors that includes "
                f"'loss'. Received: {keys or 'an empty dict'}"
            )
        train_names = self._names("training_metrics", self.trial.training_metrics, outputs)
        if "loss" in train_names:
            raise InvalidTrialError(
                f"{self._where('training_metrics')} must not list 'loss' (it is always reported)"
            )
        val_names = self._names("validation_metrics", self.trial.validation_metrics, outputs)
        optimizer = self._call("optimizer", self.trial.optimizer)
        if not hasattr(optimizer, "minimize"):
            raise InvalidTrialError(
                f"{self._where('optimizer')} must return a tf.compat.v1.train.Optimizer. "
                f"Received: {type(optimizer).__name__}"
            )
        global_step = tf.compat.v1.train.get_or_create_global_step()
        with tf.control_dependencies(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)):
            train_op = self._call(
                "optimizer", lambda: optimizer.minimize(outputs["loss"], global_step=global_step)
            )
        first = [t for t in tf.nest.flatten(record) if t.shape.rank not in (0,)]
        batch_size = tf.shape(first[0], out_type=tf.int64)[0] if first else tf.constant(1, tf.int64)
        self._train_fetches = {name: outputs[name] for name in ["loss"] + train_names}
        self._train_fetches.update({"__train_op": train_op, "__batch_size": batch_size})
        self._val_fetches = {name: outputs[name] for name in val_names}
        self._val_fetches["__batch_size"] = batch_size
        self._saver = tf.compat.v1.train.Saver(max_to_keep=None, save_relative_paths=True)
        self._init_ops = [
            tf.compat.v1.global_variables_initializer(),
            tf.compat.v1.local_variables_initializer(),
            tf.compat.v1.tables_initializer(),
        ]
        self._handle_ops = [self._train_iter.string_handle(), self._val_iter.string_handle()]

    def _names(self, method: str, fn: Any, outputs: Dict[str, Any]) -> List[str]:
        names = self._call(method, fn)
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
            raise InvalidTrialError(
                f"{self._where(method)} must return a list of metric names. Received: {names!r}"
            )
        missing = [n for n in names if n not in outputs]
        if missing:
            raise InvalidTrialError(
                f"{self._where(method)} names {missing} which build_graph did not return "
                f"(returned: {', '.join(sorted(outputs))})"
            )
        return list(dict.fromkeys(names))

    # ------------------------------------------------------------------ workloads

    def _restart_training_data(self, skip: int) -> None:
        self.session.run(self._train_iter.initializer, {self._skip: skip})

    def train(self, num_batches: int, batches_trained: int) -> Dict[str, Any]:
        tf = self._tf
        if not self._train_started:
            self._restart_training_data(self.batch_in_epoch)
            self._train_started = True
        feed = {self._handle: self._train_handle, self._is_training: True}
        batch_metrics: List[Dict[str, Any]] = []
        num_inputs = 0
        while len(batch_metrics) < num_batches:
            try:
                values = self.session.run(self._train_fetches, feed)
            except tf.errors.OutOfRangeError:
                if self.batch_in_epoch == 0:
                    raise InvalidTrialError(
                        "the training dataset returned by make_data_loaders is empty"
                    ) from None
                self.epoch += 1
                self.batch_in_epoch = 0
                self._restart_training_data(0)
                continue
            self.batch_in_epoch += 1
            num_inputs += int(values.pop("__batch_size"))
            values.pop("__train_op")
            batch_metrics.append({k: to_python(v) for k, v in values.items()})
        return {
            "batch_metrics": batch_metrics,
            "avg_metrics": average_metrics(batch_metrics),
            "num_inputs": num_inputs,
        }

    def validate(self, batches_trained: int) -> Dict[str, Any]:
        tf = self._tf
        self.session.run(self._val_iter.initializer)
        feed = {self._handle: self._val_handle, self._is_training: False}
        batches: List[Dict[str, Any]] = []
        num_inputs = 0
        while True:
            try:
                values = self.session.run(self._val_fetches, feed)
            except tf.errors.OutOfRangeError:
                break
            num_inputs += int(values.pop("__batch_size"))
            batches.append({k: to_python(v) for k, v in values.items()})
        if not batches:
            raise InvalidTrialError("the validation dataset returned by make_data_loaders is empty")
        metrics = {
            name: (value if value is not None else _mean_array([b[name] for b in batches]))
            for name, value in average_metrics(batches).items()
        }
        return {"validation_metrics": metrics, "num_inputs": num_inputs}

    # ------------------------------------------------------------------ checkpoints

    def save(self, path: str, batches_trained: int) -> None:
        with self.graph.as_default():
            self._saver.save(
                self.session, os.path.join(path, CHECKPOINT_PREFIX), write_meta_graph=False
            )
        with open(os.path.join(path, STATE_FILE), "w") as f:
            json.dump(
                {"batches_trained": batches_trained, "epoch": self.epoch,
                 "batch_in_epoch": self.batch_in_epoch},
                f,
            )
        save_rng_state(path)

    def load(self, path: str, weights_only: bool = False) -> int:
        prefix = os.path.join(path, CHECKPOINT_PREFIX)
        if not os.path.exists(prefix + ".index"):
            raise CheckpointError(f"{path} holds no TensorFlowTrial checkpoint ({CHECKPOINT_PREFIX})")
        with self.graph.as_default():
            self._saver.restore(self.session, prefix)
        load_rng_state(path)  # a warm start too: the source's random streams go on (0.13)
        if weights_only:
            return 0
        with open(os.path.join(path, STATE_FILE)) as f:
            state = json.load(f)
        self.epoch = int(state["epoch"])
        self.batch_in_epoch = int(state["batch_in_epoch"])
        self._train_started = False
        return int(state["batches_trained"])

    def close(self) -> None:
        self.session.close()


def _mean_array(values: List[Any]) -> Any:
    """Element-wise mean of equally shaped non-scalar metrics; None if shapes differ."""
    import numpy as np

    try:
        return np.mean(np.asarray(values, dtype=float), axis=0).tolist()
    except (ValueError, TypeError):
        return None
