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
import time
import traceback
from typing import Any, Dict

from determined.common.api import APIError, MasterClient
from determined.harness._host import TrialHost, TrialOp

__all__ = ["RestTrialHost", "main", "EXIT_USER_ERROR"]

EXIT_USER_ERROR = 65


class RestTrialHost(TrialHost):
    """Asks the master for operations and reports results, with the trial's token.

    Every answer to a report says whether the trial must stop (pause, preemption,
    cancel); :meth:`should_stop` returns the latest such answer.
    """

    def __init__(self, client: MasterClient):
        self.client = client
        self._stop = False

    def _post(self, what: str, body: Dict[str, Any]) -> Dict[str, Any]:
        for attempt in range(5):
            try:
                answer = self.client.runner_post(what, body)
                self._stop = bool(answer.get("stop", False))
                return answer
            except APIError as e:
                if e.status is not None or attempt == 4:
                    raise
                time.sleep(0.5 * (attempt + 1))
        return {}

    def next_operation(self) -> TrialOp:
        while True:
            answer = self.client.runner_next_op()
            if answer.get("op") is not None:
                return TrialOp.from_dict(answer["op"])

    def report_training(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self._post("training", {"batches": batches_trained, "metrics": metrics})

    def report_validation(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self._post("validation", {"batches": batches_trained, "metrics": metrics})

    def validate_op_completed(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        self._post("validate-op-completed", {"batches": batches_trained, "metrics": metrics})

    def report_checkpoint(self, batches_trained: int, uuid: str, metadata: Dict[str, Any]) -> None:
        self._post("checkpoint", {"batches": batches_trained, "uuid": uuid, "metadata": metadata})

    def is_best_validation(self, value: float) -> bool:
        return self.client.runner_is_best(value)

    def should_stop(self) -> bool:
        return self._stop

    def report_early_exit(self, reason: str) -> None:
        self._post("early-exit", {"reason": reason})


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s %(levelname)s %(message)s")
    with open(os.environ["DET_TRIAL_SPEC"], encoding="utf-8") as f:
        spec = json.load(f)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    threads = int(spec.get("threads", 1))
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    from determined.errors import InvalidModelDefError, InvalidTrialError
    from determined.harness._env import TrialEnv
    from determined.harness._runner import TrialRunner
    from determined.storage import build_storage

    env = TrialEnv(**spec["env"])
    os.chdir(env.model_dir)
    sys.path.insert(0, env.model_dir)
    client = MasterClient(os.environ["DET_MASTER"], token=os.environ["DET_TRIAL_TOKEN"])
    try:
        try:
            import torch

            torch.set_num_threads(threads)
        except ImportError:
            pass
        # A Native API experiment (internal.native.command, no entrypoint): re-run the
        # user's script up to its training call, which hands over the trial class.
        from determined.experimental._native_trial import native_trial_class

        runner = TrialRunner(env, RestTrialHost(client), build_storage(spec["storage"]),
                             trial_class=native_trial_class(env))
        reason = runner.run()
        print(f"trial {env.trial_id} exited: {reason}", flush=True)
        return 0
    except (InvalidTrialError, InvalidModelDefError) as e:
        print(f"trial {env.trial_id} failed: {e}", flush=True)
        return EXIT_USER_ERROR
    except Exception:
        traceback.print_exc()
        sys.stdout.flush()
        return 1
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
