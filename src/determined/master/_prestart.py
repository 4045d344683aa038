"""Start the embedded agent's trial zygote first thing (``python -m determined.master``).

The zygote imports PyTorch (seconds); the master's own imports and database set-up take
seconds too. Started before them, the zygote is ready sooner after the master is: the
first trials of a new master no longer wait for it (see
:func:`determined._procs._spawner.prestart_zygote`).
"""

from __future__ import annotations

import argparse
import os
from typing import Sequence

__all__ = ["prestart_trial_zygote"]


def prestart_trial_zygote(argv: Sequence[str]) -> bool:
    """Start the zygote when the master's arguments and config give it an embedded
    agent (``resource_manager.slots`` > 0, not Ray); whether it did. Arguments or a
    config it cannot read start nothing: the master's ``main`` reports them."""
    if any(a in ("-h", "--help") or a.startswith("--set-password") for a in argv):
        return False
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--config", default=os.environ.get("DET_MASTER_CONFIG"))
    p.add_argument("--slots", type=int, default=None)
    try:
        args, _ = p.parse_known_args(list(argv))
        from determined.master._config import load_master_config

        rm = load_master_config(args.config, slots=args.slots).resource_manager
    except (SystemExit, OSError, ValueError):
        return False
    if rm.slots <= 0 or rm.type == "ray":
        return False
    from determined._procs._spawner import prestart_zygote

    prestart_zygote()
    return True
