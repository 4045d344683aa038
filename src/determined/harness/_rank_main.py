"""The entry point of a distributed trial's rank r > 0: started by its chief
(:class:`~determined.harness._ranks.LocalRanks`), by an agent
(``python -m determined.harness._rank_main``) or by a Ray actor, with ``DET_RANK``
and the rest of the environment :mod:`determined.harness._ranks` describes. It runs
the trial with no host of its own (the chief broadcasts the operations)."""

from __future__ import annotations

import json
import os
import sys
import traceback

from determined._procs import die_with_parent
from determined.trial_ops import EXIT_USER_ERROR
from determined.config import is_script_entrypoint
from determined.errors import InvalidModelDefError, InvalidTrialError
from determined.harness._env import TrialEnv
from determined.harness._group import disconnect
from determined.harness._native_trial import native_trial_class
from determined.harness._rank_logs import configure_rank_logging
from determined.harness._ranks import FollowerHost, info_from_environ, with_info
from determined.harness._runner import TrialRunner
from determined.harness._trial_setup import prepare_trial_process
from determined.storage import build_storage

__all__ = ["worker_main"]


def worker_main() -> int:
    """Run this rank's part of the trial; its exit code (``EXIT_USER_ERROR``: user code)."""
    parent = os.environ.get("DET_PARENT_PID")
    die_with_parent(int(parent) if parent else None)
    info = info_from_environ()
    if info is None:
        print("determined.harness._rank_main: DET_RANK is not set", file=sys.stderr)
        return 2
    with open(os.environ["DET_DIST_SPEC"], encoding="utf-8") as f:
        spec = json.load(f)
    # As the chief's lines read (its format is in the spec of ranks it started).
    configure_rank_logging(info.rank, spec.get("log"), sys.stdout)
    threads = int(spec.get("threads", 1))
    env = with_info(TrialEnv.from_dict(spec["env"]), info)
    if is_script_entrypoint(env.experiment_config.get("entrypoint")):
        print(f"determined.harness._rank_main: trial {env.trial_id} runs a script, which "
              "starts its own ranks; a launcher runs determined.harness._script_part on "
              "each machine but the chief's instead", file=sys.stderr, flush=True)
        return 2
    os.chdir(env.model_dir)
    # Started by a launcher (an agent, a Ray actor): this rank's own working directory,
    # variables, hook and mounts, as rank 0's. Ranks the chief started inherit its.
    env = prepare_trial_process(env, spec["storage"])
    sys.path.insert(0, env.model_dir)
    try:
        import torch

        torch.set_num_threads(threads)
        runner = TrialRunner(env, FollowerHost(), build_storage(spec["storage"]),
                             trial_class=native_trial_class(env))
        runner.run()
        return 0
    except (InvalidTrialError, InvalidModelDefError) as e:
        print(f"rank {info.rank}: {e}", flush=True)
        return EXIT_USER_ERROR
    except Exception:
        print(f"rank {info.rank} failed:", flush=True)
        traceback.print_exc()
        return 1
    finally:
        disconnect()
        sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(worker_main())
