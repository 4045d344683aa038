"""Helpers shared by the TensorFlow-based trial tests (keras, estimator, tensorflow).

Run as a script it resumes a trial in a fresh process::

    python tf_trial_utils.py '<json job list>'

and prints one JSON line with each job's reported checkpoints and validations.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple, Type

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from determined.config import Length, validate_config  # noqa: E402
from determined.harness import (  # noqa: E402
    InProcessHost,
    OpKind,
    TrialEnv,
    TrialOp,
    TrialRunner,
)
from determined.storage import SharedFSStorageManager  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PREVIOUS = "<previous job's last checkpoint>"
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "src"))


def make_config(entrypoint: str, hparams: Dict[str, Any], metric: str = "val_loss",
                smaller_is_better: bool = True, **extra: Any) -> Dict[str, Any]:
    raw = {
        "entrypoint": entrypoint,
        "hyperparameters": dict(hparams),
        "searcher": {"name": "single", "metric": metric, "smaller_is_better": smaller_is_better,
                     "max_length": {"batches": 1000}},
        "reproducibility": {"experiment_seed": 1},
    }
    raw.update(extra)
    return validate_config(raw)


def plan(*steps: Any) -> List[TrialOp]:
    """Ints train to that cumulative batch count; "v" validates; "c" checkpoints."""
    ops = []
    for step in steps:
        if step == "v":
            ops.append(TrialOp(OpKind.VALIDATE))
        elif step == "c":
            ops.append(TrialOp(OpKind.CHECKPOINT))
        else:
            ops.append(TrialOp(OpKind.TRAIN, Length.from_dict({"batches": int(step)})))
    return ops + [TrialOp(OpKind.CLOSE)]


class TrialModule:
    """A test's trial module (its ``EVENTS`` and the like) as the trial loader has it
    now. The loader unloads a model directory's modules when a trial of another
    directory loads, and imports them afresh when they are loaded again: in one
    pytest-xdist worker, other files' trials run between a test file's import and its
    tests, so a module imported once at the top would go stale."""

    def __init__(self, name: str, directory: str):
        self._name, self._directory = name, directory

    def __getattr__(self, attr: str) -> Any:
        module = sys.modules.get(self._name)
        if module is None:
            if self._directory not in sys.path:
                sys.path.insert(0, self._directory)
            module = importlib.import_module(self._name)
        return getattr(module, attr)


def run_trial(
    model_dir: str,
    config: Dict[str, Any],
    ops: List[TrialOp],
    storage_dir: str,
    trial_class: Optional[Type[Any]] = None,
    latest_checkpoint: Optional[str] = None,
    trial_seed: int = 7,
    smaller_is_better: bool = True,
) -> Tuple[InProcessHost, SharedFSStorageManager]:
    hparams = {k: v["val"] for k, v in config["hyperparameters"].items()}
    env = TrialEnv(config, hparams, model_dir, trial_id=1, trial_seed=trial_seed,
                   latest_checkpoint=latest_checkpoint)
    host = InProcessHost(ops, smaller_is_better=smaller_is_better)
    storage = SharedFSStorageManager(storage_dir)
    TrialRunner(env, host, storage, trial_class=trial_class).run()
    return host, storage


def val_metric(host: InProcessHost, name: str) -> List[float]:
    return [m["validation_metrics"][name] for _, m in host.validations]


def run_jobs_in_subprocess(jobs: Sequence[Dict[str, Any]], timeout: float = 240) -> List[Dict[str, Any]]:
    """Run ``jobs`` (kwargs of :func:`_job`) in a fresh Python process."""
    env = dict(os.environ, PYTHONPATH=SRC, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, "tf_trial_utils.py"), json.dumps(list(jobs))],
        capture_output=True, text=True, env=env, timeout=timeout,
    )
    if proc.returncode != 0:
        raise AssertionError(f"subprocess failed ({proc.returncode}):\n{proc.stderr[-6000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _job(model_dir: str, config: Dict[str, Any], steps: List[Any], storage_dir: str,
         latest_checkpoint: Optional[str] = None, trial_seed: int = 7) -> Dict[str, Any]:
    host, storage = run_trial(model_dir, config, plan(*steps), storage_dir,
                              latest_checkpoint=latest_checkpoint, trial_seed=trial_seed)
    return {
        "checkpoints": [[b, storage.describe(u)] for b, u, _ in host.checkpoints],
        "validations": [[b, m] for b, m in host.validations],
        "training": [[b, m["avg_metrics"]] for b, m in host.training],
    }


if __name__ == "__main__":
    results: List[Dict[str, Any]] = []
    for job in json.loads(sys.argv[1]):
        if job.get("latest_checkpoint") == PREVIOUS:
            job["latest_checkpoint"] = results[-1]["checkpoints"][-1][1]
        results.append(_job(**job))
    print(json.dumps(results))
