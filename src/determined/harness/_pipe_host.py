"""A trial host over a ``multiprocessing`` connection: the trial process of a local
experiment talks to its driver with it, and a script trial's command talks to its
wrapper (``_script_trial``) with it.

Protocol over a ``multiprocessing`` pipe (tuples; the child asks, the other end answers
only ``next_op``, ``is_best`` and ``recorded_checkpoints``):

    child -> driver: ("next_op",) ("training", b, m) ("training_batch", [(b, m), ...])
                     ("validation", b, m)
                     ("checkpoint", b, uuid, meta) ("is_best", value)
                     ("validate_op_completed", b, m) ("recorded_checkpoints",)
                     ("early_exit", reason) ("error", kind, message) ("exit", reason)
                     ("progress", units) ("script_exited", code)
    driver -> child: ("op", op_dict) ("best", bool) ("recorded", [uuid, ...] or None), or
                     instead of any of these ("failed", message): a report sent earlier
                     without an answer was rejected (a script trial's wrapper), and at
                     any time ("stop",): checkpoint and exit (Ctrl-C in the driver); an
                     op_dict with "stop" is a Close that only stops the trial (it resumes
                     later)
"""

from __future__ import annotations

from typing import AbstractSet, Any, Dict, Optional, Sequence, Tuple

from determined.errors import ReportError
from determined.harness._host import TrialHost, TrialOp

__all__ = ["PipeHost"]


class PipeHost(TrialHost):
    """The asking end of the protocol above, over ``conn`` (a ``multiprocessing``
    ``Connection``)."""

    def __init__(self, conn: Any):
        self.conn = conn
        self._stop = False

    def _recv(self, kind: str) -> Any:
        while True:
            got, *payload = self.conn.recv()
            if got == "stop":
                self._stop = True
                continue
            if got == "failed":
                raise ReportError(payload[0])
            assert got == kind, got
            return payload[0]

    def next_operation(self) -> TrialOp:
        self.conn.send(("next_op",))
        payload = self._recv("op")
        if payload.get("stop"):
            self._stop = True
        return TrialOp.from_dict(payload)

    def should_stop(self) -> bool:
        # Between requests the driver sends nothing but ("stop",).
        while not self._stop and self.conn.poll():
            if self.conn.recv()[0] == "stop":
                self._stop = True
        return self._stop

    def report_training(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self.conn.send(("training", batches_trained, metrics))

    def report_training_batch(self, reports: Sequence[Tuple[int, Dict[str, Any]]]) -> None:
        self.conn.send(("training_batch", list(reports)))

    def report_validation(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self.conn.send(("validation", batches_trained, metrics))

    def validate_op_completed(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self.conn.send(("validate_op_completed", batches_trained, metrics))

    def report_checkpoint(self, batches_trained: int, uuid: str, metadata: Dict[str, Any]) -> None:
        self.conn.send(("checkpoint", batches_trained, uuid, metadata))

    def recorded_checkpoints(self) -> Optional[AbstractSet[str]]:
        self.conn.send(("recorded_checkpoints",))
        recorded = self._recv("recorded")
        return None if recorded is None else frozenset(recorded)

    def is_best_validation(self, value: float) -> bool:
        self.conn.send(("is_best", value))
        return bool(self._recv("best"))

    def experiment_best_validation(self) -> Optional[float]:
        self.conn.send(("best_validation",))
        return self._recv("best_value")

    def report_early_exit(self, reason: str) -> None:
        self.conn.send(("early_exit", reason))

    def report_progress(self, units: float) -> None:
        self.conn.send(("progress", float(units)))

    def script_exited(self, code: int) -> None:
        self.conn.send(("script_exited", int(code)))
