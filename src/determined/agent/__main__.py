"""Run an agent: ``python -m determined.agent --master URL [--slots N] [--id NAME] ...``
(also the ``det-agent`` command)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

__all__ = ["main"]


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="det-agent",
        description="Offer this machine's slots to a Determined master and run the trials "
                    "it schedules here.")
    p.add_argument("--master", default=os.environ.get("DET_MASTER"),
                   help="the master's URL (default: $DET_MASTER)")
    p.add_argument("--slots", type=int, default=None,
                   help="slots to offer (default: one per NVIDIA GPU, else the CPU count)")
    p.add_argument("--id", dest="agent_id", default=None,
                   help="agent id, unique in the cluster (default: the host name)")
    p.add_argument("--label", default="",
                   help="only experiments with this resources.agent_label (or none) run here")
    p.add_argument("--work-dir", dest="work_dir", default=None,
                   help="model definitions and trial specs (default: ~/.determined/agent/ID)")
    p.add_argument("--token", default=os.environ.get("DET_AGENT_TOKEN"),
                   help="the master's security.agent_token (default: $DET_AGENT_TOKEN)")
    p.add_argument("--address", default=os.environ.get("DET_AGENT_ADDRESS"),
                   help="this machine's address as the master and other agents reach it: "
                        "task services (notebooks, shells, TensorBoards) listen there and "
                        "ranks of trials spanning agents rendezvous there (default: "
                        "$DET_AGENT_ADDRESS, else this machine's address towards the master)")
    p.add_argument("--slots-per-gpu", dest="slots_per_gpu", type=int, default=1, metavar="K",
                   help="slots offered per GPU: K trials share each GPU, each capped at 1/K "
                        "of its memory (default 1)")
    p.add_argument("--gpu-memory-fraction", dest="gpu_memory_fraction", type=float,
                   default=None, metavar="F",
                   help="each slot's cap on its GPU's memory, a fraction in (0, 1] (default "
                        "1/K with --slots-per-gpu K; no cap with one slot per GPU)")
    p.add_argument("--gpu-metrics-interval", dest="gpu_metrics_interval", type=float,
                   default=5.0, metavar="SECONDS",
                   help="seconds between readings of each busy GPU's utilization and memory "
                        "(default 5)")
    args = p.parse_args(argv)
    if not args.master:
        p.error("--master is required (or set DET_MASTER), e.g. --master http://10.0.0.5:8080")
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 PID` prints every thread's stack
    from determined.common.log_format import configure_logging

    configure_logging(sys.stdout, errors=sys.stderr)
    from determined.agent._agent import Agent

    try:
        agent = Agent(args.master, slots=args.slots, agent_id=args.agent_id, label=args.label,
                      work_dir=args.work_dir, token=args.token, address=args.address,
                      slots_per_gpu=args.slots_per_gpu,
                      gpu_memory_fraction=args.gpu_memory_fraction,
                      gpu_metrics_interval=args.gpu_metrics_interval)
    except ValueError as e:
        p.error(str(e))
    return agent.run()


if __name__ == "__main__":
    sys.exit(main())
