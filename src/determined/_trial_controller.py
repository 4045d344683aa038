"""Upstream 0.13's low-level trial API: ``det.Trial``, ``det.TrialController``,
``det.CallbackTrialController``, ``det.LoopTrialController``.

A trial class names its controller in ``trial_controller_class``. The platform builds
the context (``trial_context_class(env, hvd_config)``), the trial (``trial(context)``)
and the controller (``from_trial(...)``), then drives it (``harness._upstream``):

- a :class:`CallbackTrialController` is called per workload: ``train_for_step(step_id,
  num_batches)`` returns ``det.util.make_metrics(num_inputs, batch_metrics)`` (or that
  wrapped by ``det.util.wrap_metrics(metrics, stop_requested)``),
  ``compute_validation_metrics(step_id)`` returns ``{"validation_metrics": {...}}``,
  ``save(path)`` and ``load(path)`` write and read a checkpoint directory;
- any other :class:`TrialController` runs its own ``run()`` loop over
  ``self.workloads`` (see ``determined.workload``).

Example::

    class MyController(det.CallbackTrialController):
        @staticmethod
        def from_trial(trial_inst, *args, **kwargs):
            return MyController(trial_inst.context, *args, **kwargs)
        def train_for_step(self, step_id, num_batches):
            return det.util.make_metrics(num_batches, [{"loss": 0.5}] * num_batches)
        ...

    class MyTrial(det.Trial):
        trial_controller_class = MyController
        def __init__(self, context):
            self.context = context
"""

from __future__ import annotations

import abc
import pathlib
from typing import Any, Optional, Type

from determined.harness._context import TrialContext

__all__ = ["CallbackTrialController", "LoopTrialController", "NativeContext", "Trial",
           "TrialController"]


class NativeContext(TrialContext):
    """The context the Native API hands to a script (``det.experimental.*.init``)."""

    def __init__(self, env: Any, hvd_config: Any = None):
        super().__init__(env, hvd_config)


class TrialController(abc.ABC):
    """Runs a trial's workloads (upstream 0.13's low-level controller API).

    Args:
        context: the trial's context.
        env: the ``det.EnvContext``.
        workloads: the workload stream (``determined.workload``).
        load_path: a checkpoint directory to restore from, or None.
        rendezvous_info: ``det.RendezvousInfo`` of the trial's processes.
        hvd_config: ``determined.horovod.HorovodContext``.
    """

    def __init__(self, context: Any, env: Any, workloads: Any, load_path: Optional[pathlib.Path],
                 rendezvous_info: Any, hvd_config: Any):
        self.context = context
        self.env = env
        self.workloads = workloads
        self.load_path = load_path
        self.rendezvous_info = rendezvous_info
        self.hvd_config = hvd_config
        self.is_chief = rendezvous_info is None or rendezvous_info.get_rank() == 0

    @staticmethod
    @abc.abstractmethod
    def pre_execute_hook(env: Any, hvd_config: Any) -> None:
        """Runs before the trial is built (seed RNGs, configure the framework)."""

    @staticmethod
    @abc.abstractmethod
    def from_trial(trial_inst: Any, context: Any, env: Any, workloads: Any,
                   load_path: Optional[pathlib.Path], rendezvous_info: Any,
                   hvd_config: Any) -> "TrialController":
        """Build the controller for a trial instance."""

    @staticmethod
    @abc.abstractmethod
    def from_native(context: Any, env: Any, workloads: Any, load_path: Optional[pathlib.Path],
                    rendezvous_info: Any, hvd_config: Any) -> "TrialController":
        """Build the controller for a Native API script."""

    @abc.abstractmethod
    def run(self) -> None:
        """Execute every workload of ``self.workloads``."""

    @staticmethod
    def supports_multi_gpu_training() -> bool:
        return False

    @staticmethod
    def supports_mixed_precision() -> bool:
        return False

    @staticmethod
    def supports_averaging_training_metrics() -> bool:
        return False

    def initialize_wrapper(self) -> None:
        """Called once the controller exists, before the first workload."""

    @staticmethod
    def support_determined_native() -> bool:
        return False


class LoopTrialController(TrialController):
    """A controller that owns its training loop (``run()`` iterates ``self.workloads``)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)


class CallbackTrialController(TrialController):
    """A controller the platform calls once per workload; it restores ``load_path`` on
    construction."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        if self.load_path is not None:
            self.load(pathlib.Path(self.load_path))

    @staticmethod
    def pre_execute_hook(env: Any, hvd_config: Any) -> None:
        import random

        import numpy as np

        random.seed(env.trial_seed)
        np.random.seed(env.trial_seed)

    @staticmethod
    def from_native(*args: Any, **kwargs: Any) -> "TrialController":
        raise NotImplementedError("CallbackTrialController does not support the Native API")

    def run(self) -> None:
        from determined import util
        from determined.workload import Skipped, Workload

        for w, args, respond in self.workloads:
            stop = self.context.get_stop_requested
            if w.kind == Workload.Kind.RUN_STEP:
                respond(util.wrap_metrics(self.train_for_step(w.step_id, w.num_batches), stop()))
            elif w.kind == Workload.Kind.COMPUTE_VALIDATION_METRICS:
                respond(util.wrap_metrics(self.compute_validation_metrics(w.step_id), stop()))
            elif w.kind == Workload.Kind.CHECKPOINT_MODEL:
                respond(self.save(pathlib.Path(args[0])))
            elif w.kind == Workload.Kind.TERMINATE:
                self.terminate()
                respond(Skipped())
                break
            else:
                raise AssertionError(f"unexpected workload {w.kind}")

    @abc.abstractmethod
    def train_for_step(self, step_id: int, num_batches: int) -> Any:
        """Train ``num_batches`` batches; return ``det.util.make_metrics(...)``."""

    @abc.abstractmethod
    def compute_validation_metrics(self, step_id: int) -> Any:
        """Validate; return ``{"validation_metrics": {...}}``."""

    @abc.abstractmethod
    def save(self, path: pathlib.Path) -> Any:
        """Write a checkpoint into the directory ``path``."""

    @abc.abstractmethod
    def load(self, path: pathlib.Path) -> None:
        """Restore from the checkpoint directory ``path``."""

    def terminate(self) -> None:
        """Release resources when the trial ends."""


class Trial(abc.ABC):
    """Base of every trial class; ``trial_controller_class`` runs it and
    ``trial_context_class`` is the type of its ``context``."""

    trial_controller_class: Optional[Type[TrialController]] = None
    trial_context_class: Type[Any] = TrialContext

    @abc.abstractmethod
    def __init__(self, context: Any) -> None:
        pass
