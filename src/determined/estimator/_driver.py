"""Pausing ``Estimator.train`` between workloads.

``Estimator.train`` owns its graph, session and input pipeline for as long as it
runs, so one call serves the whole trial: it runs in a background thread and a
control hook pauses it between workloads. The controller (main thread) sends
commands; the hook executes them inside the live session:

- ``train n``: run n more batches, then reply with their losses (and whether a
  hook called ``request_stop()``);
- ``save``: write a TF checkpoint into the model directory, reply with its prefix;
- ``stop``: leave ``Estimator.train`` (an internal exception unwinds it).

Evaluation and SavedModel exports run in the main thread from the saved
checkpoint while training is paused.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

import tensorflow as tf

__all__ = ["TrainingDriver", "batch_size_tensor"]


def batch_size_tensor() -> Any:
    """The leading dimension of the input pipeline's batches in the current graph, or None.

    The Estimator turns the input_fn's dataset into an ``IteratorGetNext`` op; its
    first output with a batch dimension tells how many records each step consumes.
    """
    graph = tf.compat.v1.get_default_graph()
    for op in graph.get_operations():
        if op.type == "IteratorGetNext":
            for output in op.outputs:
                if output.shape.rank is None or output.shape.rank >= 1:
                    return tf.shape(output, out_type=tf.int64)[0]
    return None


class _Stop(Exception):
    """Unwinds Estimator.train when the trial closes."""


class _ControlHook(tf.estimator.SessionRunHook):
    """Pauses training between workloads (put it first among the training hooks).

    A workload ends in the ``before_run`` of the next step, after every hook's
    ``after_run`` of its last batch ran (so each hook runs once per batch). When a hook
    calls ``request_stop()`` the training loop ends and :meth:`end` answers the workload
    with a stop request, then serves checkpoint requests with the still-open session.
    """

    def __init__(self, driver: "TrainingDriver"):
        self.driver = driver
        self.remaining = 0
        self.training = False
        self.losses: List[float] = []

    def begin(self) -> None:
        losses = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.LOSSES)
        self.loss = losses[-1] if losses else None
        self.global_step = tf.compat.v1.train.get_global_step()
        savers = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SAVERS)
        self.saver = savers[0] if savers else tf.compat.v1.train.Saver(
            sharded=True, save_relative_paths=True
        )
        self.batch_size = batch_size_tensor()
        self.records = 0

    def after_create_session(self, session: Any, coord: Any) -> None:
        self._serve(session)

    def before_run(self, run_context: Any) -> Any:
        if self.remaining <= 0:  # the workload's batches are done, hooks included
            self._finish_workload(stop_requested=False)
            self._serve(run_context.session)
        fetches: Dict[str, Any] = {"step": self.global_step}
        if self.loss is not None:
            fetches["loss"] = self.loss
        if self.batch_size is not None:
            fetches["batch_size"] = self.batch_size
        return tf.compat.v1.train.SessionRunArgs(fetches)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        results = run_values.results
        if "loss" in results:
            self.losses.append(float(results["loss"]))
        self.records += int(results.get("batch_size", self.driver.batch_size))
        self.remaining -= 1

    def end(self, session: Any) -> None:
        """Training stopped by a hook's ``request_stop()`` (or the input ended)."""
        if self.training:
            self._finish_workload(stop_requested=True)
        self._serve(session, stopped=True)

    def _finish_workload(self, stop_requested: bool) -> None:
        self.driver._reply(("trained", (self.losses, self.records, stop_requested)))
        self.losses, self.records, self.training = [], 0, False

    def _serve(self, session: Any, stopped: bool = False) -> None:
        """Execute commands until one says to train on (or stop)."""
        while True:
            command = self.driver._commands.get()
            kind = command[0]
            if kind == "train":
                if stopped:  # the loop is over: this workload ends at once, as stopped
                    self.driver._reply(("trained", ([], 0, True)))
                    continue
                self.remaining = command[1]
                self.training = True
                return
            if kind == "save":
                step = session.run(self.global_step)
                prefix = self.saver.save(
                    session, os.path.join(self.driver.model_dir, "model.ckpt"), global_step=step
                )
                self.driver._reply(("saved", prefix))
                continue
            raise _Stop()


class TrainingDriver:
    """Runs ``estimator.train(input_fn, hooks)`` in a thread, paused between commands.

    Args:
        start_training: calls ``Estimator.train`` with the given extra hook.
        model_dir: the estimator's model directory (checkpoints are saved there).
        batch_size: records per batch assumed when the input pipeline cannot be found.
    """

    def __init__(self, start_training: Callable[[Any], None], model_dir: str, batch_size: int):
        self._start_training = start_training
        self.model_dir = model_dir
        self.batch_size = batch_size
        self._commands: "queue.Queue[Tuple[Any, ...]]" = queue.Queue()
        self._replies: "queue.Queue[Tuple[str, Any]]" = queue.Queue()
        self._thread: Optional[threading.Thread] = None
        self._finished = False

    def _reply(self, message: Tuple[str, Any]) -> None:
        self._replies.put(message)

    def _run(self) -> None:
        try:
            self._start_training(_ControlHook(self))
            self._reply(("finished", None))
        except _Stop:
            self._reply(("stopped", None))
        except BaseException as e:  # handed to the main thread
            self._reply(("error", e))
        finally:
            self._finished = True

    def _request(self, command: Tuple[Any, ...], expect: str) -> Any:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="det-estimator-train", daemon=True)
            self._thread.start()
        if self._finished:
            while not self._replies.empty():  # it failed before this request: say why
                kind, value = self._replies.get()
                if kind == "error":
                    raise value
            raise RuntimeError("Estimator.train already returned")
        self._commands.put(command)
        kind, value = self._replies.get()
        if kind == "error":
            self._thread.join()
            raise value
        if kind != expect:
            raise RuntimeError(
                f"Estimator.train returned before the platform asked it to stop ({kind}); "
                "does the training input_fn end or the model request a stop?"
            )
        return value

    def train(self, num_batches: int) -> Tuple[List[float], int, bool]:
        """Run ``num_batches`` more batches; return their losses, how many records, and
        whether a hook requested a stop (then fewer batches may have run)."""
        return self._request(("train", num_batches), "trained")

    def save(self) -> str:
        """Write a checkpoint of the live session; return its prefix."""
        return self._request(("save",), "saved")

    def stop(self) -> None:
        if self._thread is None or self._finished:
            return
        self._commands.put(("stop",))
        self._thread.join()
        while not self._replies.empty():
            kind, value = self._replies.get()
            if kind == "error":
                raise value
