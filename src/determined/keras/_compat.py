"""Upstream 0.13 names of ``determined.keras`` kept for user code: ``TFKerasContext``,
``TFKerasTrainConfig``, ``TFKerasTrialController`` and the input-manager helpers."""

from __future__ import annotations

import pathlib
from typing import Any, List, NamedTuple, Optional, Tuple

from determined._framework_controller import FrameworkTrialController, build
from determined.tensorflow._data_context import TFDataContext

__all__ = ["TFKerasContext", "TFKerasTrainConfig", "TFKerasTrialController",
           "_get_multi_gpu_model_and_optimizer", "_init_input_managers"]


class TFKerasContext(TFDataContext):
    """What the trial and Native contexts of tf.keras share: ``wrap_dataset``."""


class TFKerasTrainConfig(NamedTuple):
    """The inputs and callbacks of a Keras training loop."""

    training_data: Any
    validation_data: Any
    callbacks: List[Any]


def _init_input_managers(context: Any, train_config: TFKerasTrainConfig) -> Tuple[Any, Any]:
    """Loaders of the training and validation inputs (``keras._data.Loader``)."""
    from determined.keras._data import make_loader

    bs = context.get_per_slot_batch_size()
    rank, size = context.distributed.get_rank(), context.distributed.get_size()
    return (make_loader(train_config.training_data, "training data", bs, rank, size),
            make_loader(train_config.validation_data, "validation data", bs, rank, size))


def _get_multi_gpu_model_and_optimizer(
    pre_compiled_model: Any,
    optimizer: Any,
    env: Any,
    hvd_config: Any,
    profile_frequency: Optional[int],
    profile_filename: str,
) -> Tuple[Any, Any]:
    """The model and optimizer to compile: unchanged (TensorFlow trials use one slot)."""
    return pre_compiled_model, optimizer


class TFKerasTrialController(FrameworkTrialController):
    """Upstream's controller of ``TFKerasTrial``s (see ``determined._framework_controller``)."""

    _internal = "determined.keras._controller:TFKerasTrialController"

    def __init__(self, model: Any, session: Any, train_config: Any, *args: Any,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.model, self.session, self.train_config = model, session, train_config

    @staticmethod
    def pre_execute_hook(env: Any, hvd_config: Any) -> None:
        import tensorflow as tf

        FrameworkTrialController.pre_execute_hook(env, hvd_config)
        tf.random.set_seed(env.trial_seed)

    @staticmethod
    def from_trial(trial_inst: Any, context: Any, env: Any, workloads: Any,
                   load_path: Optional[pathlib.Path], rendezvous_info: Any,
                   hvd_config: Any) -> "TFKerasTrialController":
        out = build(TFKerasTrialController, trial_inst, context, env, workloads, load_path,
                    rendezvous_info, hvd_config)
        out.model = out._impl.model if hasattr(out._impl, "model") else None
        out.session, out.train_config = None, None
        return out

    @staticmethod
    def from_native(context: Any, env: Any, workloads: Any, load_path: Optional[pathlib.Path],
                    rendezvous_info: Any, hvd_config: Any) -> Any:
        raise NotImplementedError(
            "Native API: use determined.experimental.keras.init() and model.fit()")

    @staticmethod
    def compile_model(context: Any, compile_args: Any, env: Any, hvd_config: Any) -> None:
        """Compile the context's wrapped model with ``compile_args`` (``inspect.BoundArguments``
        or a dict of ``model.compile`` keywords)."""
        models = getattr(context, "_wrapped_models", [])
        if not models:
            raise RuntimeError("compile_model: call context.wrap_model(model) first")
        kwargs = getattr(compile_args, "arguments", compile_args) or {}
        models[-1].compile(**dict(kwargs))

    @staticmethod
    def support_determined_native() -> bool:
        return True

    @staticmethod
    def supports_multi_gpu_training() -> bool:
        return False

    def run(self) -> None:
        super().run()

    def compute_validation_metrics(self) -> Any:
        return super().compute_validation_metrics()
