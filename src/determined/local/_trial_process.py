"""The trial process of a local experiment, and the host it talks to its driver with.

Protocol over a ``multiprocessing`` pipe (tuples; the child asks, the driver answers
only ``next_op``, ``is_best`` and ``recorded_checkpoints``):

    child -> driver: ("next_op",) ("training", b, m) ("validation", b, m)
                     ("checkpoint", b, uuid, meta) ("is_best", value)
                     ("validate_op_completed", b, m) ("recorded_checkpoints",)
                     ("early_exit", reason) ("error", kind, message) ("exit", reason)
    driver -> child: ("op", op_dict) ("best", bool) ("recorded", [uuid, ...]), and at
                     any time ("stop",): checkpoint and exit (Ctrl-C in the driver); an
                     op_dict with "stop" is a Close that only stops the trial (it resumes
                     later)
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import traceback
from typing import AbstractSet, Any, Dict, Optional

from determined.harness import TrialEnv, TrialHost, TrialOp

__all__ = ["PipeHost", "trial_main"]


class PipeHost(TrialHost):
    def __init__(self, conn: Any):
        self.conn = conn
        self._stop = False

    def _recv(self, kind: str) -> Any:
        while True:
            got, *payload = self.conn.recv()
            if got == "stop":
                self._stop = True
                continue
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

    def report_validation(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self.conn.send(("validation", batches_trained, metrics))

    def validate_op_completed(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self.conn.send(("validate_op_completed", batches_trained, metrics))

    def report_checkpoint(self, batches_trained: int, uuid: str, metadata: Dict[str, Any]) -> None:
        self.conn.send(("checkpoint", batches_trained, uuid, metadata))

    def recorded_checkpoints(self) -> Optional[AbstractSet[str]]:
        self.conn.send(("recorded_checkpoints",))
        return frozenset(self._recv("recorded"))

    def is_best_validation(self, value: float) -> bool:
        self.conn.send(("is_best", value))
        return bool(self._recv("best"))

    def report_early_exit(self, reason: str) -> None:
        self.conn.send(("early_exit", reason))


def trial_main(conn: Any, env: TrialEnv, storage_config: Dict[str, Any], log_path: str,
               num_threads: int) -> None:
    """Entry point of a trial process (started with the ``spawn`` method)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the driver stops us in order
    log = open(log_path, "a", buffering=1, encoding="utf-8")
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log
    logging.basicConfig(level=logging.INFO, stream=log,
                        format="%(asctime)s [trial %(process)d] %(levelname)s %(message)s")
    os.environ.setdefault("OMP_NUM_THREADS", str(num_threads))
    # Per-trial TensorBoard files, beside the trial's log.
    from determined.tensorboard._paths import set_platform_dir

    set_platform_dir(os.path.join(
        os.path.dirname(os.path.dirname(log_path)), "tensorboard", f"trial_{env.trial_id}"))
    from determined.errors import InvalidTrialError, InvalidModelDefError
    from determined.harness import TrialRunner
    from determined.harness._ranks import distributed_trial
    from determined.storage import build_storage

    os.chdir(env.model_dir)
    try:
        try:
            import torch

            torch.set_num_threads(num_threads)
        except ImportError:
            pass
        # A distributed trial: this process is rank 0 and starts the others.
        with distributed_trial(env, storage_config, num_threads) as env:
            runner = TrialRunner(env, PipeHost(conn), build_storage(storage_config))
            reason = runner.run()
        conn.send(("exit", reason))
    except (InvalidTrialError, InvalidModelDefError) as e:
        print(str(e), file=log)
        conn.send(("error", "user", str(e)))
        raise SystemExit(1)
    except Exception as e:
        text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        print(text, file=log)
        conn.send(("error", "platform", f"{type(e).__name__}: {e}\n{text}"))
        raise SystemExit(1)
    finally:
        log.flush()
