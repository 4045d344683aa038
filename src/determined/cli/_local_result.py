"""The end of a ``--local`` search in the CLI (``create --local``, ``resume``)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["finish_local_run"]


def finish_local_run(result: Any, as_json: bool) -> int:
    """The exit code of a finished ``--local`` search (0 when COMPLETED), after printing
    its result as JSON with ``--json`` (the live display printed it otherwise)."""
    if as_json:
        print(json.dumps({
            "experiment_id": result.experiment_id,
            "state": result.state,
            "best_trial": result.best_trial.summary() if result.best_trial else None,
            "best_checkpoint": result.best_checkpoint,
            "best_checkpoint_path": result.best_checkpoint_path,
            "directory": result.directory,
            "trials": [t.summary() for t in result.trials],
        }, default=str))
    return 0 if result.state == "COMPLETED" else 1
