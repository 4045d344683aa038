"""The process a script trial runs on each of its machines but the chief's: started by
an agent for its part of a trial spanning agents (``python -m
determined.harness._script_part``, with ``DET_TRIAL_SPEC`` naming the part's spec),
it prepares the trial process as the chief's does (working directory, variables,
startup hook, mounts) and runs the entrypoint command with this machine's place among
the trial's machines (:func:`determined.harness._script_trial.run_script_part`)."""

from __future__ import annotations

import json
import os
import sys
import traceback

from determined._procs import die_with_parent
from determined.errors import InvalidModelDefError
from determined.harness._env import TrialEnv
from determined.harness._rank_logs import configure_trial_logging
from determined.harness._script_trial import run_script_part
from determined.harness._trial_setup import prepare_trial_process
from determined.trial_ops import EXIT_USER_ERROR

__all__ = ["main"]


def main() -> int:
    """Run this machine's script; its exit code (``EXIT_USER_ERROR``: a bad setup)."""
    parent = os.environ.get("DET_PARENT_PID")
    die_with_parent(int(parent) if parent else None)
    configure_trial_logging(sys.stdout)
    with open(os.environ["DET_TRIAL_SPEC"], encoding="utf-8") as f:
        spec = json.load(f)
    rendezvous = spec.get("rendezvous")
    if not isinstance(rendezvous, dict):
        print("determined.harness._script_part: the spec names no machines (rendezvous); "
              "it runs only on an agent's part of a script trial", file=sys.stderr)
        return 2
    env = TrialEnv.from_dict(spec["env"])
    try:
        os.chdir(env.model_dir)
        env = prepare_trial_process(env, spec["storage"])
        return run_script_part(env, spec["storage"], os.environ.get("DET_MASTER"), rendezvous)
    except InvalidModelDefError as e:
        print(f"trial {env.trial_id} failed on machine {rendezvous.get('container_rank')}: "
              f"{e}", flush=True)
        return EXIT_USER_ERROR
    except Exception:  # noqa: BLE001 - the exit code carries it; the log the traceback
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
