"""One rank of a Trial class started by ``determined.launch.torch_distributed --trial``:
the trial runner with this rank's place from torchrun's variables. Rank 0 talks to
the trial's host through the script link; the others follow it."""

from __future__ import annotations

import os
import sys
import traceback
from typing import List, Optional

from determined.harness._rank_logs import configure_trial_logging
from determined.trial_ops import EXIT_USER_ERROR


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python3 -m determined.launch._trial_rank module:TrialClass", file=sys.stderr)
        return 2
    configure_trial_logging(sys.stdout)
    from determined import _info
    from determined.core._context import _script_link
    from determined.errors import InvalidModelDefError, InvalidTrialError
    from determined.harness import TrialRunner
    from determined.harness._ranks import FollowerHost, distributed_trial
    from determined.harness._env import TrialEnv
    from determined.harness._usercode import load_trial_class
    from determined.storage import build_storage

    path = os.environ.get(_info.INFO_ENV)
    if not path:
        print("--trial runs only as a trial of the platform (DET_CLUSTER_INFO is unset)",
              file=sys.stderr)
        return 2
    env_dict, storage_config, _ = _info.read_info_file(path)
    # Each rank runs the Trial class itself: the trial's entrypoint here is that class
    # (so its checkpoints load as the class's), not the launcher command.
    env_dict["experiment_config"] = dict(env_dict["experiment_config"], entrypoint=args[0])
    env = TrialEnv.from_dict(env_dict)
    # Where this rank sits (distributed_trial reads DET_RANK and friends). The ranks
    # join at torchrun's own store (MASTER_ADDR/MASTER_PORT, set by torchrun).
    os.environ.update({
        "DET_RANK": os.environ["RANK"], "DET_SIZE": os.environ["WORLD_SIZE"],
        "DET_LOCAL_RANK": os.environ["LOCAL_RANK"],
        "DET_LOCAL_SIZE": os.environ["LOCAL_WORLD_SIZE"],
        "DET_NUM_AGENTS": os.environ.get("GROUP_WORLD_SIZE", "1"),
        "DET_NODE_RANK": os.environ.get("GROUP_RANK", "0"),
    })
    try:
        trial_class = load_trial_class(args[0], env.model_dir)
        with distributed_trial(env, storage_config) as env:
            if env.distributed.rank == 0:
                link = _script_link()
                if link is None:
                    raise RuntimeError("rank 0 cannot reach the trial (DET_SCRIPT_LINK unset)")
                host, storage = link.host, link.storage
            else:
                host, storage = FollowerHost(), build_storage(storage_config)
            reason = TrialRunner(env, host, storage, trial_class=trial_class).run()
        print(f"rank {env.distributed.rank} of trial {env.trial_id} exited: {reason}", flush=True)
        return 0
    except (InvalidTrialError, InvalidModelDefError) as e:
        print(f"trial {env.trial_id} failed: {e}", flush=True)
        return EXIT_USER_ERROR
    except Exception:  # noqa: BLE001 - the exit code carries it; the log the traceback
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
