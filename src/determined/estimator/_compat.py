"""Upstream 0.13 names of ``determined.estimator`` kept for user code:
``ServingInputReceiverFn``, ``EstimatorTrialController``, the metric helpers behind
``make_metric`` and the model-directory helpers."""

from __future__ import annotations

import glob
import os

import shutil
from typing import Any, Callable, Dict, List, Union

import numpy as np
import tensorflow as tf

from determined._framework_controller import FrameworkTrialController, build
from determined.estimator._metric import MetricReducer, make_metric

__all__ = [
    "EstimatorTrialController",
    "ServingInputReceiverFn",
    "_DistributedMetricMaker",
    "_SimpleMetricReducer",
    "_cleanup_after_train_step",
    "_cleanup_after_validation_step",
    "_scan_checkpoint_directory",
    "_update_checkpoint_path_in_state_file",
]

#: A function returning what ``Estimator.export_saved_model`` takes as its input receiver.
ServingInputReceiverFn = Callable[
    ...,
    Union[tf.estimator.export.ServingInputReceiver,
          tf.estimator.export.TensorServingInputReceiver],
]


class _SimpleMetricReducer(MetricReducer):
    """Buffers every batch's value; ``reduce_fn`` turns all slots' values into the metric."""

    def __init__(self, reduce_fn: Callable[[List[Any]], Any]):
        self.reduce_fn = reduce_fn
        self.reset()

    def reset(self) -> None:
        self.values: List[Any] = []

    def accumulate(self, metric: Any) -> Any:
        self.values.append(metric)
        return self.values

    def cross_slot_reduce(self, per_slot_metrics: List[Any]) -> Any:
        return self.reduce_fn([v for slot in per_slot_metrics for v in slot])


class _DistributedMetricMaker:
    """``make_metric()`` as an object: ``(value_op, update_op)`` of ``metric`` reduced by
    ``reducer`` (a function of all values or a ``MetricReducer``)."""

    def __init__(self, context: Any, metric: Any, reducer: Any, numpy_dtype: Any):
        self.context = context
        self.metric = metric
        self.reducer = reducer
        self.numpy_dtype = numpy_dtype

    def make_metric(self) -> Any:
        return make_metric(self.metric, self.reducer, self.numpy_dtype)


def _scan_checkpoint_directory(checkpoint_dir: str) -> Dict[str, List[str]]:
    """TF checkpoint prefixes in ``checkpoint_dir`` and their files."""
    out: Dict[str, List[str]] = {}
    for index in glob.glob(os.path.join(checkpoint_dir, "*.index")):
        prefix = index[: -len(".index")]
        out[os.path.basename(prefix)] = sorted(
            os.path.basename(f) for f in glob.glob(prefix + ".*"))
    return out


def _update_checkpoint_path_in_state_file(model_dir: str) -> None:
    """Point the ``checkpoint`` state file of ``model_dir`` at its newest checkpoint by a
    relative path (so the directory can move)."""
    latest = tf.train.latest_checkpoint(model_dir)
    if latest is None:
        return
    name = os.path.basename(latest)
    with open(os.path.join(model_dir, "checkpoint"), "w") as f:
        f.write(f'model_checkpoint_path: "{name}"\nall_model_checkpoint_paths: "{name}"\n')


def _cleanup_after_train_step(model_dir: str) -> None:
    """Remove all but the newest TF checkpoint from ``model_dir``."""
    latest = tf.train.latest_checkpoint(model_dir)
    keep = os.path.basename(latest) if latest else None
    for name, files in _scan_checkpoint_directory(model_dir).items():
        if name != keep:
            for f in files:
                os.remove(os.path.join(model_dir, f))


def _cleanup_after_validation_step(model_dir: str, is_chief: bool) -> None:
    """Remove evaluation leftovers (``eval*/``) of non-chief processes."""
    if is_chief:
        return
    for path in glob.glob(os.path.join(model_dir, "eval*")):
        shutil.rmtree(path, ignore_errors=True)


class EstimatorTrialController(FrameworkTrialController):
    """Upstream's controller of ``EstimatorTrial``s (see ``determined._framework_controller``)."""

    _internal = "determined.estimator._controller:EstimatorTrialController"

    def __init__(self, estimator: Any, user_train_spec: Any, val_spec: Any,
                 serving_input_receiver_fns: Dict[str, Any], context: Any, *args: Any,
                 **kwargs: Any) -> None:
        super().__init__(context, *args, **kwargs)
        self.estimator, self.user_train_spec, self.val_spec = estimator, user_train_spec, val_spec
        self.serving_input_receiver_fns = serving_input_receiver_fns

    @staticmethod
    def pre_execute_hook(env: Any, hvd_config: Any) -> None:
        EstimatorTrialController.set_random_seed(env.trial_seed)

    @staticmethod
    def set_random_seed(seed: int) -> None:
        import random

        random.seed(seed)
        np.random.seed(seed % 2**32)
        tf.compat.v1.set_random_seed(seed)

    @staticmethod
    def from_trial(trial_inst: Any, context: Any, env: Any, *args: Any,
                   **kwargs: Any) -> "EstimatorTrialController":
        workloads, load_path, rendezvous_info, hvd_config = (list(args) + [None] * 4)[:4]
        workloads = kwargs.get("workloads", workloads)
        load_path = kwargs.get("load_path", load_path)
        rendezvous_info = kwargs.get("rendezvous_info", rendezvous_info)
        hvd_config = kwargs.get("hvd_config", hvd_config)
        out = build(EstimatorTrialController, trial_inst, context, env, workloads,
                    load_path, rendezvous_info, hvd_config)
        impl = out._impl
        out.estimator, out.user_train_spec = impl.estimator, impl.train_spec
        out.val_spec, out.serving_input_receiver_fns = impl.eval_spec, impl.serving_fns
        return out

    @staticmethod
    def from_native(context: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("Native API: use determined.experimental.estimator.init() "
                                  "and context.train_and_evaluate()")

    @staticmethod
    def supports_multi_gpu_training() -> bool:
        return False

    @staticmethod
    def support_determined_native() -> bool:
        return True

    def run(self) -> None:
        super().run()

    def compute_validation_metrics(self) -> Any:
        return super().compute_validation_metrics()

    def average_metrics(self, metrics: Dict[str, Any]) -> Dict[str, Any]:
        """Each metric averaged over this trial's processes (one here: unchanged)."""
        return {k: np.mean(v) if isinstance(v, list) else v for k, v in metrics.items()}

    def allgather_metrics(self, metrics: Dict[str, Any]) -> List[Dict[str, Any]]:
        """Every process's ``metrics`` (one process here)."""
        return [metrics]



