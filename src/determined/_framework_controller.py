"""The public framework controllers of upstream 0.13 (``det.pytorch.PyTorchTrialController``,
``det.keras.TFKerasTrialController``, ``det.estimator.EstimatorTrialController``).

The platform runs framework trials with its own controllers (``harness``); these
classes exist for code that names or subclasses upstream's. Each wraps the platform's
controller for the trial's class and runs a workload stream through it, so it can also
be driven by hand (``from_trial(...)`` then ``run()``). Note: the wrapped controller
builds its own instance of the trial class.
"""

from __future__ import annotations

import pathlib
import random
from typing import Any, Optional

import numpy as np

from determined._trial_controller import LoopTrialController

__all__ = ["FrameworkTrialController"]


class FrameworkTrialController(LoopTrialController):
    """A ``det.LoopTrialController`` that runs workloads through the platform's controller."""

    _internal = ""  # "module:Class" of the platform's controller

    def _setup(self, trial_inst: Any) -> None:
        import importlib

        from determined.harness._env import TrialEnv

        self.trial = trial_inst
        module, _, name = self._internal.partition(":")
        internal = getattr(importlib.import_module(module), name)
        env = self.env.to_trial_env() if hasattr(self.env, "to_trial_env") else self.env
        if not isinstance(env, TrialEnv):
            raise TypeError(f"Expected a det.EnvContext. Received: {self.env!r}")
        self._impl = internal(type(trial_inst), env)
        if self.load_path is not None:
            self._impl.load(str(self.load_path))

    @staticmethod
    def pre_execute_hook(env: Any, hvd_config: Any) -> None:
        random.seed(env.trial_seed)
        np.random.seed(env.trial_seed % 2**32)

    @staticmethod
    def support_determined_native() -> bool:
        return True

    def run(self) -> None:
        from determined import util
        from determined.workload import Skipped, Workload

        for w, args, respond in self.workloads:
            stop = self._impl.context.get_stop_requested
            if w.kind == Workload.Kind.RUN_STEP:
                metrics = self._impl.train(w.num_batches, w.total_batches_processed)
                respond(util.wrap_metrics(metrics, stop()))
            elif w.kind == Workload.Kind.COMPUTE_VALIDATION_METRICS:
                respond(util.wrap_metrics(self._impl.validate(w.total_batches_processed), stop()))
            elif w.kind == Workload.Kind.CHECKPOINT_MODEL:
                path = pathlib.Path(args[0])
                path.mkdir(parents=True, exist_ok=True)
                self._impl.save(str(path), w.total_batches_processed)
                respond({})
            elif w.kind == Workload.Kind.TERMINATE:
                self._impl.close()
                respond(Skipped())
                return
            else:
                raise AssertionError(f"unexpected workload {w.kind}")

    def compute_validation_metrics(self) -> Any:
        """One validation through the platform's controller."""
        return self._impl.validate(0)


def build(cls: Any, trial_inst: Any, context: Any, env: Any, workloads: Any,
          load_path: Optional[pathlib.Path], rendezvous_info: Any, hvd_config: Any) -> Any:
    out = cls.__new__(cls)
    LoopTrialController.__init__(out, context, env, workloads, load_path, rendezvous_info,
                                 hvd_config)
    out._setup(trial_inst)
    return out
