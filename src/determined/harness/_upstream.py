"""Runs trials written against upstream 0.13's low-level controller API.

A ``det.Trial`` subclass whose ``trial_controller_class`` is a ``det.TrialController``
(not one of the framework trials) is run through :class:`UpstreamController`, which
builds the upstream objects (``det.EnvContext``, ``det.RendezvousInfo``,
``HorovodContext``), calls ``pre_execute_hook``, the context, the trial and
``from_trial``, then turns the runner's requests into workloads:

- a ``det.CallbackTrialController`` gets direct calls (``train_for_step``, ...);
- any other controller runs its own ``run()`` loop in a helper thread that pulls
  workloads from a queue; each request waits for its ``respond(...)``.
"""

from __future__ import annotations

import pathlib
import queue
import threading
from typing import Any, Dict, Optional, Type

from determined.errors import InvalidTrialError
from determined.harness._controller import TrialController
from determined.harness._env import TrialEnv
from determined.harness._usercode import describe_class, user_code_error
from determined.harness._workload import Kind

__all__ = ["UpstreamController", "is_upstream_trial"]


def is_upstream_trial(trial_class: Type[Any]) -> bool:
    """Whether ``trial_class`` names an upstream-style ``det.TrialController``."""
    from determined._trial_controller import TrialController as UpstreamBase

    ctrl = getattr(trial_class, "trial_controller_class", None)
    return isinstance(ctrl, type) and issubclass(ctrl, UpstreamBase)


class _Stream:
    """The workload stream a ``run()`` loop iterates (fed by the runner's requests)."""

    def __init__(self) -> None:
        self.requests: "queue.Queue[Any]" = queue.Queue()
        self.responses: "queue.Queue[Any]" = queue.Queue()

    def __iter__(self) -> Any:
        while True:
            item = self.requests.get()
            if item is None:
                return
            w, args = item
            yield w, args, self.responses.put
            if w.kind == Kind.TERMINATE:
                return


class UpstreamController(TrialController):
    """The runner's controller for an upstream low-level ``det.Trial``."""

    framework = "upstream-controller"
    checkpoint_format = "custom"

    def __init__(self, trial_class: Type[Any], env: TrialEnv):
        super().__init__(trial_class, env)
        from determined._env_context import EnvContext, RendezvousInfo
        from determined._trial_controller import CallbackTrialController
        from determined.horovod import HorovodContext

        ctrl_cls = trial_class.trial_controller_class
        self.env_context = EnvContext.from_trial_env(env)
        self.rendezvous_info = RendezvousInfo.from_distributed_info(env.distributed)
        self.hvd_config = HorovodContext.from_configs(env.experiment_config,
                                                      self.rendezvous_info, env.hparams)
        self._callback = issubclass(ctrl_cls, CallbackTrialController)
        self._stream = _Stream()
        self._thread: Optional[threading.Thread] = None
        self._error: Optional[BaseException] = None
        self.step_id = 0
        self._call(ctrl_cls, "pre_execute_hook", self.env_context, self.hvd_config)
        context_cls = getattr(trial_class, "trial_context_class", None)
        from determined.harness._context import TrialContext

        context_cls = context_cls or TrialContext
        try:
            self._context = context_cls(self.env_context, self.hvd_config)
        except Exception as e:
            raise user_code_error(e, context_cls, "__init__") from None
        self.trial = self._call(trial_class, "__init__", self._context, construct=True)
        self.controller = self._call(
            ctrl_cls, "from_trial", self.trial, self._context, self.env_context, self._stream,
            None, self.rendezvous_info, self.hvd_config)
        if not hasattr(self.controller, "run"):
            raise InvalidTrialError(
                f"{describe_class(ctrl_cls)}.from_trial returned {self.controller!r}, "
                "not a det.TrialController")
        self._call(self.controller, "initialize_wrapper")

    @property
    def context(self) -> Any:
        return self._context

    def _call(self, obj: Any, method: str, *args: Any, construct: bool = False) -> Any:
        cls = obj if isinstance(obj, type) else type(obj)
        try:
            return obj(*args) if construct else getattr(obj, method)(*args)
        except InvalidTrialError:
            raise
        except Exception as e:
            raise user_code_error(e, cls, method) from None

    # -- workloads -------------------------------------------------------------------

    def _workload(self, kind: Kind, num_batches: int = 0, total: int = 0, args: Any = None) -> Any:
        from determined.workload import Workload

        w = Workload(kind, self.step_id, num_batches, total)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run_loop, name="det-controller-run",
                                            daemon=True)
            self._thread.start()
        self._stream.requests.put((w, list(args or [])))
        response = self._stream.responses.get()
        if isinstance(response, _Failed):
            raise user_code_error(response.error, type(self.controller), "run") from None
        return response

    def _run_loop(self) -> None:
        try:
            self.controller.run()
        except BaseException as e:  # handed to the waiting request
            self._stream.responses.put(_Failed(e))
            return
        self._stream.responses.put(_Failed(InvalidTrialError(
            "run() returned while workloads were still being sent")))

    def _unwrap(self, response: Any, method: str) -> Dict[str, Any]:
        """``wrap_metrics(...)`` output or bare metrics -> bare metrics (+ stop request)."""
        if not isinstance(response, dict):
            raise InvalidTrialError(
                f"{describe_class(type(self.controller))}.{method} returned {response!r}; "
                "expected det.util.make_metrics(...) or det.util.wrap_metrics(...)")
        # wrap_metrics(...) output, or {"metrics": ...} built by hand (upstream's own
        # fixtures leave stop_requested out).
        if isinstance(response.get("metrics"), dict) and (
                "stop_requested" in response or len(response) == 1):
            if response.get("stop_requested"):
                self._context.set_stop_requested(True)
            return response["metrics"]
        return response

    def train(self, num_batches: int, batches_trained: int) -> Dict[str, Any]:
        from determined import util

        self.step_id += 1
        if self._callback:
            raw = self._call(self.controller, "train_for_step", self.step_id, num_batches)
        else:
            raw = self._workload(Kind.RUN_STEP, num_batches, batches_trained)
        metrics = dict(self._unwrap(raw, "train_for_step"))
        batch_metrics = metrics.get("batch_metrics")
        if not isinstance(batch_metrics, list):
            raise InvalidTrialError(
                f"{describe_class(type(self.controller))}.train_for_step returned no "
                "batch_metrics list; build its result with det.util.make_metrics(num_inputs, "
                "batch_metrics)")
        if "avg_metrics" not in metrics:
            metrics["avg_metrics"] = util.make_metrics(None, batch_metrics)["avg_metrics"]
        metrics.setdefault(
            "num_inputs", num_batches * self._context.get_global_batch_size())
        return metrics

    def validate(self, batches_trained: int) -> Dict[str, Any]:
        if self._callback:
            raw = self._call(self.controller, "compute_validation_metrics", self.step_id)
        else:
            raw = self._workload(Kind.COMPUTE_VALIDATION_METRICS, 0, batches_trained)
        metrics = self._unwrap(raw, "compute_validation_metrics")
        if "validation_metrics" not in metrics:
            metrics = {"validation_metrics": metrics}
        return {"validation_metrics": dict(metrics["validation_metrics"]),
                "num_inputs": metrics.get("num_inputs", 0)}

    def save(self, path: str, batches_trained: int) -> None:
        if self._callback:
            self._call(self.controller, "save", pathlib.Path(path))
        else:
            self._workload(Kind.CHECKPOINT_MODEL, 0, batches_trained, [pathlib.Path(path)])

    def load(self, path: str, weights_only: bool = False) -> int:
        from determined.storage import read_metadata

        if self._callback:
            self._call(self.controller, "load", pathlib.Path(path))
        else:
            self.controller.load_path = pathlib.Path(path)  # read by its run() loop
        meta = read_metadata(path)
        return 0 if weights_only else int(meta.get("batch_number") or 0)

    def close(self) -> None:
        if self._callback:
            self._call(self.controller, "terminate")
        elif self._thread is not None and self._thread.is_alive():
            self._workload(Kind.TERMINATE)
            self._thread.join(timeout=30)


class _Failed:
    def __init__(self, error: BaseException):
        self.error = error
