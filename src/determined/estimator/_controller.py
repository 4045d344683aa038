"""Runs an :class:`EstimatorTrial` under the trial runner.

Who owns what: the trial builds the Estimator and its specs; the
``TrainingDriver`` keeps one ``Estimator.train`` call alive across workloads
(so the input pipeline and session persist); this controller points the
Estimator at a private model directory, evaluates from checkpoints saved by the
driver, and copies TF checkpoint files plus SavedModel exports into each
platform checkpoint.
"""

from __future__ import annotations

import glob
import inspect
import json
import logging
import os
import shutil
import tempfile
from typing import Any, Callable, Dict, List, Type

import tensorflow as tf

from determined.common import scratch as scratch_dirs
from determined.errors import CheckpointError, InvalidTrialError, UserCodeError
from determined.estimator._context import EstimatorTrialContext
from determined.estimator._driver import TrainingDriver, batch_size_tensor
from determined.estimator._hooks import RunHook
from determined.harness import TrialController, TrialEnv, describe_class, user_code_error
from determined.tensorflow._common import (
    accepts_positional,
    framework_name,
    require_single_slot,
    tensorboard_dir,
)
from determined.tensorflow._metrics import average_metrics, to_python
from determined.tensorflow._rng import load_rng_state, save_rng_state, seed_all

__all__ = ["EstimatorTrialController"]

logger = logging.getLogger("determined")

STATE_FILE = "determined-estimator-state.json"
_CKPT_STATE = "checkpoint"


class EstimatorTrialController(TrialController):
    checkpoint_format = "saved_model"

    def __init__(self, trial_class: Type[Any], env: TrialEnv):
        super().__init__(trial_class, env)
        self.framework = framework_name()
        require_single_slot(env, trial_class)
        if tf.get_logger().level == logging.NOTSET:
            tf.get_logger().setLevel(logging.WARNING)  # the Estimator logs every step at INFO
        seed_all(env.trial_seed)
        self._graph = tf.Graph()  # user builders run in a graph, as under TF1
        self._context = EstimatorTrialContext(env)
        self.trial = self._call("__init__", lambda: trial_class(self._context))

        # tf.compat.v1.estimator.Estimator is the base of tf.estimator.Estimator (v2).
        self.estimator = self._build("build_estimator", tf.compat.v1.estimator.Estimator,
                                     "tf.estimator.Estimator")
        self.train_spec = self._build("build_train_spec", tf.estimator.TrainSpec, "tf.estimator.TrainSpec")
        self.eval_spec = self._build("build_validation_spec", tf.estimator.EvalSpec, "tf.estimator.EvalSpec")
        fns = self._call_builder("build_serving_input_receiver_fns") or {}
        if not isinstance(fns, dict) or not all(
            isinstance(k, str) and k and "/" not in k and callable(v) for k, v in fns.items()
        ):
            raise InvalidTrialError(
                f"{self._where('build_serving_input_receiver_fns')} must return a dict from "
                f"export names to serving_input_receiver_fn callables. Received: {fns!r}"
            )
        self.serving_fns: Dict[str, Callable[..., Any]] = fns
        self.run_hooks: List[RunHook] = [h for h in self.train_spec.hooks if isinstance(h, RunHook)]

        self.model_dir = scratch_dirs.make("estimator")
        _use_model_dir(self.estimator, self.model_dir, env.trial_seed)
        self.driver = TrainingDriver(self._start_training, self.model_dir,
                                     self._context.get_per_slot_batch_size())
        if self.train_spec.max_steps is not None:
            logger.info("TrainSpec.max_steps=%s is ignored; the searcher decides the length",
                        self.train_spec.max_steps)

    @property
    def context(self) -> EstimatorTrialContext:
        return self._context

    # ------------------------------------------------------------------ building

    def _where(self, method: str) -> str:
        return f"{describe_class(self.trial_class)}.{method}"

    def _call(self, method: str, fn: Any) -> Any:
        """Call user code in graph mode (TF1 behaviour, e.g. placeholders), wrapping errors."""
        try:
            with self._graph.as_default():
                return fn()
        except Exception as e:
            raise user_code_error(e, self.trial_class, method) from None

    def _call_builder(self, method: str) -> Any:
        """Call a builder with or without the PEDL-era ``hparams`` argument."""
        bound = getattr(self.trial, method)
        if accepts_positional(bound) >= 1:
            return self._call(method, lambda: bound(self._context.get_hparams()))
        return self._call(method, bound)

    def _build(self, method: str, cls: type, name: str) -> Any:
        value = self._call_builder(method)
        if not isinstance(value, cls):
            raise InvalidTrialError(
                f"{self._where(method)} must return a {name}. Received: {type(value).__name__}"
            )
        return value

    def _input_fn(self, input_fn: Callable[..., Any], method: str, repeat: bool) -> Callable[..., Any]:
        """Wrap ``input_fn``: check it returns a Dataset, repeat it for training."""
        try:
            accepted = set(inspect.signature(input_fn).parameters)
        except (TypeError, ValueError):
            accepted = set()
        context = self._context

        def wrapped(mode: Any = None, params: Any = None, config: Any = None) -> Any:
            kwargs = {k: v for k, v in (("mode", mode), ("params", params), ("config", config))
                      if k in accepted}
            before = context._wrapped_datasets + sum(context.experimental._cache.used.values())
            try:
                dataset = input_fn(**kwargs)
            except Exception as e:
                raise user_code_error(e, self.trial_class, f"{method} input_fn") from None
            if not isinstance(dataset, tf.data.Dataset):
                raise UserCodeError(
                    f"the input_fn of {self._where(method)} must return a tf.data.Dataset "
                    f"(EstimatorTrial does not support (features, labels) tuples). "
                    f"Received: {type(dataset).__name__}"
                )
            after = context._wrapped_datasets + sum(context.experimental._cache.used.values())
            if after == before and context._wrapped_datasets == 0:
                logger.warning("the dataset of %s was not passed to context.wrap_dataset()",
                               self._where(method))
            return dataset.repeat() if repeat else dataset

        return wrapped

    # ------------------------------------------------------------------ training

    def _start_training(self, control_hook: Any) -> None:
        self.estimator.train(
            input_fn=self._input_fn(self.train_spec.input_fn, "build_train_spec", repeat=True),
            hooks=[control_hook] + list(self.train_spec.hooks),  # the control hook first
            steps=None, max_steps=None,
        )

    def _driver_call(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as e:
            raise user_code_error(e, self.trial_class, "build_estimator (training)") from None

    def train(self, num_batches: int, batches_trained: int) -> Dict[str, Any]:
        losses, records, stop_requested = self._driver_call(lambda: self.driver.train(num_batches))
        if stop_requested:  # a SessionRunHook called request_stop(), as upstream
            self._context.set_stop_requested(True)
        batch_metrics = [{"loss": v} for v in losses]
        return {
            "batch_metrics": batch_metrics,
            "avg_metrics": average_metrics(batch_metrics),
            "num_inputs": records,
        }

    # ------------------------------------------------------------------ validation

    def validate(self, batches_trained: int) -> Dict[str, Any]:
        prefix = self._driver_call(self.driver.save)
        counter = _RecordCounter(self._context.get_per_slot_batch_size())
        stop = _StopSeen()
        spec = self.eval_spec
        try:
            results = self.estimator.evaluate(
                input_fn=self._input_fn(spec.input_fn, "build_validation_spec", repeat=False),
                # The user's hooks before _StopSeen; the Estimator's steps hook after.
                steps=spec.steps, hooks=[counter] + list(spec.hooks) + [stop],
                checkpoint_path=prefix, name=spec.name,
            )
        except Exception as e:
            raise user_code_error(e, self.trial_class, "build_validation_spec (evaluation)") from None
        metrics = {str(k): to_python(v) for k, v in results.items()}
        if stop.seen:  # a SessionRunHook stopped the evaluation: the trial stops (as 0.13)
            self._context.set_stop_requested(True)
        return {
            "validation_metrics": metrics,
            "num_inputs": counter.records,
        }

    # ------------------------------------------------------------------ checkpoints

    def save(self, path: str, batches_trained: int) -> None:
        prefix = self._driver_call(self.driver.save)
        name = os.path.basename(prefix)
        for file in glob.glob(prefix + ".*"):
            shutil.copy2(file, path)
        _write_checkpoint_state(path, name)
        for export, fn in self.serving_fns.items():
            self._export(export, fn, prefix, os.path.join(path, export))
        with open(os.path.join(path, STATE_FILE), "w") as f:
            json.dump({"batches_trained": batches_trained, "checkpoint": name}, f)
        save_rng_state(path)

    def _export(self, name: str, fn: Callable[..., Any], prefix: str, dest: str) -> None:
        scratch = scratch_dirs.make("export")
        try:
            exported = self.estimator.export_saved_model(scratch, fn, checkpoint_path=prefix)
        except Exception as e:
            shutil.rmtree(scratch, ignore_errors=True)
            raise user_code_error(
                e, self.trial_class, f"build_serving_input_receiver_fns ({name!r} export)"
            ) from None
        exported = exported.decode() if isinstance(exported, bytes) else exported
        # <checkpoint>/<name>/<timestamp>/, as upstream's export_saved_model(export_dir_base)
        os.makedirs(dest, exist_ok=True)
        shutil.move(exported, os.path.join(dest, os.path.basename(exported.rstrip(os.sep))))
        shutil.rmtree(scratch, ignore_errors=True)

    def load(self, path: str, weights_only: bool = False) -> int:
        state_file = os.path.join(path, STATE_FILE)
        if not os.path.exists(state_file):
            raise CheckpointError(f"{path} holds no Estimator checkpoint ({STATE_FILE})")
        with open(state_file) as f:
            state = json.load(f)
        name = state["checkpoint"]
        files = glob.glob(os.path.join(path, name + ".*"))
        if not files:
            raise CheckpointError(f"{path} lacks the TF checkpoint files {name}.*")
        for file in files:
            shutil.copy2(file, self.model_dir)
        _write_checkpoint_state(self.model_dir, name)
        for hook in self.run_hooks:
            self._call("build_train_spec (RunHook.on_checkpoint_load)",
                       lambda h=hook: h.on_checkpoint_load(path))
        load_rng_state(path)  # a warm start too: the source's random streams go on (0.13)
        return 0 if weights_only else int(state["batches_trained"])

    def on_checkpoint_end(self, path: str) -> None:
        for hook in self.run_hooks:
            self._call("build_train_spec (RunHook.on_checkpoint_end)",
                       lambda h=hook: h.on_checkpoint_end(path))

    def close(self) -> None:
        try:
            self.driver.stop()
            for hook in self.run_hooks:
                self._call("build_train_spec (RunHook.on_trial_close)", hook.on_trial_close)
        finally:
            if self.env.distributed.rank == 0:
                _copy_summaries(self.model_dir, tensorboard_dir())
            shutil.rmtree(self.model_dir, ignore_errors=True)


class _RecordCounter(tf.estimator.SessionRunHook):
    """Counts the records an evaluation consumed."""

    def __init__(self, default_batch_size: int) -> None:
        self.default = default_batch_size
        self.records = 0

    def begin(self) -> None:
        self.batch_size = batch_size_tensor()

    def before_run(self, run_context: Any) -> Any:
        if self.batch_size is None:
            return None
        return tf.compat.v1.train.SessionRunArgs(self.batch_size)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        size = run_values.results
        self.records += int(size) if size is not None else self.default


class _StopSeen(tf.estimator.SessionRunHook):
    """Notes a ``request_stop()`` of the hooks that ran before it."""

    def __init__(self) -> None:
        self.seen = False

    def after_run(self, run_context: Any, run_values: Any) -> None:
        self.seen = self.seen or run_context.stop_requested


def _use_model_dir(estimator: Any, model_dir: str, seed: int) -> None:
    """Point the Estimator at the trial's private model directory.

    The platform saves checkpoints itself, so the Estimator's own periodic
    checkpointing is switched off; the graph seed defaults to the trial seed.
    ``Estimator`` has no public setter for these.
    """
    previous = estimator.model_dir
    if previous and os.path.isdir(previous) and not os.listdir(previous) and \
            os.path.dirname(os.path.abspath(previous)) == os.path.abspath(tempfile.gettempdir()):
        os.rmdir(previous)  # the empty temporary directory Estimator made for itself
    seeded = estimator.config.tf_random_seed
    config = estimator.config.replace(
        model_dir=model_dir, save_checkpoints_steps=None, save_checkpoints_secs=None,
        tf_random_seed=seed if seeded is None else seeded,
    )
    estimator._config = config
    estimator._model_dir = model_dir


def _copy_summaries(model_dir: str, dest: str) -> None:
    """Copy the Estimator's tfevent files (training and ``eval/``) to the TensorBoard dir."""
    for path in glob.glob(os.path.join(model_dir, "**", "events.out.tfevents.*"), recursive=True):
        target = os.path.join(dest, os.path.relpath(path, model_dir))
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(path, target)
        except OSError as e:
            logger.warning("cannot copy Estimator summaries to %s: %s", dest, e)
            return


def _write_checkpoint_state(directory: str, name: str) -> None:
    with open(os.path.join(directory, _CKPT_STATE), "w") as f:
        f.write(f'model_checkpoint_path: "{name}"\nall_model_checkpoint_paths: "{name}"\n')
