"""A trial process run by the master: its host is the master's REST API.

The process is started with ``python -m determined.harness._rest_host`` and these
environment variables: ``DET_MASTER`` (URL), ``DET_TRIAL_TOKEN`` (the per-trial
bearer token) and ``DET_TRIAL_SPEC`` (a JSON file: ``env`` -- the TrialEnv fields --,
``storage`` -- the checkpoint_storage section -- and ``threads``).

Exit codes: 0 when the trial closed or stopped as asked; ``EXIT_USER_ERROR`` when
the user's code cannot run (restarting would only fail again); anything else is a
crash the master may retry.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
import traceback
from typing import AbstractSet, Any, Dict, List, Optional, Sequence, Tuple

from determined.common.api import APIError, MasterClient
from determined.trial_ops import EXIT_USER_ERROR
from determined.harness._host import TrialHost, TrialOp
from determined.harness._rank_logs import configure_trial_logging

__all__ = ["RestTrialHost", "main", "EXIT_USER_ERROR", "SCRIPT_STOP_POLL_SECONDS"]

#: How often a script trial's process asks the master whether it must stop.
SCRIPT_STOP_POLL_SECONDS = 2.0


class RestTrialHost(TrialHost):
    """Asks the master for operations and reports results, with the trial's token.

    Every answer to a report says whether the trial must stop (pause, preemption,
    cancel); :meth:`should_stop` returns the latest such answer.

    Training reports are sent by a background thread, several per request when
    the trial reports faster than the master answers, so training never waits
    for the network. Every other call first waits until they are all stored
    (:meth:`flush`): a checkpoint or validation is never recorded ahead of the
    training it follows. Reports not yet sent when a trial crashes lie after its
    latest checkpoint, which is where a restarted trial resumes anyway.
    """

    #: training reports queued before report_training blocks (backpressure)
    MAX_PENDING = 1000
    #: the sender waits up to this long for more training reports before a request
    #: with fewer than LINGER_REPORTS (a request per report costs the master most);
    #: flush() cuts the wait short
    LINGER_SECONDS = 0.02
    LINGER_REPORTS = 100

    def __init__(self, client: MasterClient, stop_poll_seconds: Optional[float] = None):
        self.client = client
        self._stop = False
        # A script trial may go long without a report: should_stop() then asks.
        self._stop_poll = stop_poll_seconds
        self._stop_asked = time.monotonic()
        self._cv = threading.Condition()
        self._pending: List[Dict[str, Any]] = []
        self._sending = False
        self._flushing = 0
        self._failure: Optional[BaseException] = None
        self._sender: Optional[threading.Thread] = None
        self._next_op: Optional[Dict[str, Any]] = None  # answered with a report

    def flush(self) -> None:
        """Wait until every training report is stored; re-raise a failed send."""
        with self._cv:
            self._flushing += 1
            self._cv.notify_all()
            try:
                while self._pending or self._sending:
                    self._cv.wait()
            finally:
                self._flushing -= 1
            self._raise_failure()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    def _send_training(self) -> None:
        while True:
            with self._cv:
                while not self._pending:
                    self._cv.wait()
                deadline = time.monotonic() + self.LINGER_SECONDS
                while len(self._pending) < self.LINGER_REPORTS and not self._flushing:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cv.wait(left)
                batch, self._pending = self._pending, []
                self._sending = True
                self._cv.notify_all()
            try:
                self._post_training(batch)
            except BaseException as e:  # noqa: BLE001 - raised in the trial's thread
                with self._cv:
                    self._failure = e
            finally:
                with self._cv:
                    self._sending = False
                    self._cv.notify_all()

    def _post_training(self, batch: List[Dict[str, Any]]) -> None:
        """One request for ``batch``; when the master refuses it as a bad request, the
        reports one by one, so only those it refuses are lost (the first error raised)."""
        if len(batch) > 1:
            try:
                self._post("training-batch", {"reports": batch})
                return
            except APIError as e:
                if e.status != 400:
                    raise
        failure: Optional[APIError] = None
        for report in batch:
            try:
                self._post("training", report)
            except APIError as e:
                if e.status != 400 or len(batch) == 1:
                    raise
                failure = failure or e
        if failure is not None:
            raise failure

    def _post(self, what: str, body: Dict[str, Any]) -> Dict[str, Any]:
        for attempt in range(5):
            try:
                answer = self.client.runner_post(what, body)
                self._stop = bool(answer.get("stop", False))
                self._stop_asked = time.monotonic()
                return answer
            except APIError as e:
                if e.status is not None or attempt == 4:
                    raise
                time.sleep(0.5 * (attempt + 1))
        return {}

    def next_operation(self) -> TrialOp:
        self.flush()
        while True:
            if self._next_op is not None:
                answer, self._next_op = {"op": self._next_op}, None
            else:
                answer = self.client.runner_next_op()
            if answer.get("op") is not None:
                if answer["op"].get("stop"):  # a Close that only stops (pause, preemption)
                    self._stop = True
                return TrialOp.from_dict(answer["op"])

    def report_training(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self.report_training_batch(((batches_trained, metrics),))

    def report_training_batch(self, reports: Sequence[Tuple[int, Dict[str, Any]]]) -> None:
        with self._cv:
            self._raise_failure()
            if self._sender is None:
                self._sender = threading.Thread(target=self._send_training,
                                                name="det-training-reports", daemon=True)
                self._sender.start()
            for batches_trained, metrics in reports:
                while len(self._pending) >= self.MAX_PENDING:
                    self._cv.wait()
                self._pending.append({"batches": batches_trained, "metrics": metrics})
                if len(self._pending) in (1, self.LINGER_REPORTS):  # wake the sender only then
                    self._cv.notify_all()

    def report_validation(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self.flush()
        self._post("validation", {"batches": batches_trained, "metrics": metrics})

    def validate_op_completed(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self.flush()
        self._post("validate-op-completed", {"batches": batches_trained, "metrics": metrics})

    def report_validation_completing_op(self, batches_trained: int,
                                        metrics: Dict[str, Any]) -> None:
        """One request instead of three: the validation, the Validate operation's
        completion, and the next operation when the searcher has one at once (the
        runner asks for it next; it is kept for :meth:`next_operation`)."""
        self.flush()
        answer = self._post("validation", {"batches": batches_trained, "metrics": metrics,
                                           "completes_op": True, "next_op": True})
        self._next_op = answer.get("op")

    def report_checkpoint(self, batches_trained: int, uuid: str, metadata: Dict[str, Any]) -> None:
        self.flush()
        self._post("checkpoint", {"batches": batches_trained, "uuid": uuid, "metadata": metadata})

    def recorded_checkpoints(self) -> Optional[AbstractSet[str]]:
        self.flush()
        return frozenset(self.client.request("GET", "/trial-runner/checkpoints")["uuids"])

    def is_best_validation(self, value: float) -> bool:
        self.flush()
        return self.client.runner_is_best(value)

    def experiment_best_validation(self) -> Optional[float]:
        self.flush()
        return self.client.request("GET", "/trial-runner/best-validation")["value"]

    def should_stop(self) -> bool:
        if (self._stop_poll is not None and not self._stop
                and time.monotonic() - self._stop_asked >= self._stop_poll):
            self._stop_asked = time.monotonic()
            self._stop = bool(self.client.request("GET", "/trial-runner/should-stop")["stop"])
        return self._stop

    def report_early_exit(self, reason: str) -> None:
        self.flush()
        self._post("early-exit", {"reason": reason})

    def report_progress(self, units: float) -> None:
        self.flush()
        self._post("progress", {"units": float(units)})

    def script_exited(self, code: int) -> None:
        self.flush()
        self._post("script-exited", {"code": int(code)})


def _explain_gpu_oom(trial_id: int, error: BaseException) -> None:
    """Name the memory cap and its options when a trial sharing a GPU ran out of memory."""
    from determined.harness._gpu_cap import memory_cap_error

    why = memory_cap_error(error)
    if why is not None:
        print(f"trial {trial_id} failed: {why}", flush=True)


def main() -> int:
    configure_trial_logging(sys.stdout)
    with open(os.environ["DET_TRIAL_SPEC"], encoding="utf-8") as f:
        spec = json.load(f)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    threads = int(spec.get("threads", 1))
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    from determined.errors import InvalidModelDefError, InvalidTrialError
    from determined.config import is_script_entrypoint
    from determined.harness._env import TrialEnv
    from determined.harness._runner import TrialRunner
    from determined.harness._script_trial import run_script
    from determined.storage import build_storage

    env = TrialEnv.from_dict(spec["env"])
    from determined.storage import missing_host_path

    missing = missing_host_path(spec["storage"])
    if missing:  # not created here: the agent's machine lacks a path the config names
        print(f"trial {env.trial_id} failed: {missing}", flush=True)
        return EXIT_USER_ERROR
    os.chdir(env.model_dir)
    sys.path.insert(0, env.model_dir)
    client = MasterClient(os.environ["DET_MASTER"], token=os.environ["DET_TRIAL_TOKEN"])
    script = is_script_entrypoint(env.experiment_config.get("entrypoint"))
    host = RestTrialHost(client, stop_poll_seconds=SCRIPT_STOP_POLL_SECONDS if script else None)
    try:
        try:
            if not script:  # a script is a process of its own
                import torch

                torch.set_num_threads(threads)
        except ImportError:
            pass
        from determined.harness._gpu_cap import apply_memory_cap

        apply_memory_cap()  # on a GPU shared with other trials (slots_per_gpu > 1)
        # A Native API experiment (internal.native.command, no entrypoint): re-run the
        # user's script up to its training call, which hands over the trial class.
        from determined.harness._native_trial import native_trial_class
        from determined.harness._ranks import FollowerHost, distributed_trial

        # slots_per_trial > 1: rank 0 (unless DET_RANK says otherwise) starts the other
        # ranks on this machine; only rank 0 talks to the master.
        with distributed_trial(env, spec["storage"], threads) as env:
            if script:
                # (run_script logs how the script ended)
                return run_script(env, host, spec["storage"], os.environ["DET_MASTER"],
                                  spec.get("rendezvous"))
            runner = TrialRunner(env, host if env.distributed.rank == 0 else FollowerHost(),
                                 build_storage(spec["storage"]),
                                 trial_class=native_trial_class(env))
            reason = runner.run()
        print(f"trial {env.trial_id} exited: {reason}", flush=True)
        return 0
    except (InvalidTrialError, InvalidModelDefError) as e:
        print(f"trial {env.trial_id} failed: {e}", flush=True)
        _explain_gpu_oom(env.trial_id, e)
        return EXIT_USER_ERROR
    except Exception as e:
        traceback.print_exc()
        _explain_gpu_oom(env.trial_id, e)
        sys.stdout.flush()
        return 1
    finally:
        try:  # training reported before a failure is still worth storing
            host.flush()
        except Exception:  # noqa: BLE001 - the master may be gone; nothing to add
            pass
        client.close()


if __name__ == "__main__":
    sys.exit(main())
