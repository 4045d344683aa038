"""``python3 -m determined.launch.torch_distributed [TORCHRUN_ARGS... --] CMD...`` or
``... --trial module:TrialClass``: start the trial's ranks on this machine with
``torchrun`` (``torch.distributed.run``).

On the platform: one process per slot of the trial on this machine
(``--nproc_per_node``), ``--nnodes`` the trial's machines, ``--node_rank`` this one's
rank, the chief's address for the rendezvous (on several machines at port 29400 plus
the trial's ``DET_UNIQUE_PORT_OFFSET``, which the chief's agent picked free; see
:mod:`determined.launch._ports`). Each rank runs
``determined.launch.wrap_rank RANK CMD...`` (its output tagged with its rank) and
has ``DET_CHIEF_IP`` and ``DET_UNIQUE_PORT_OFFSET`` set, so that
``core.DistributedContext.from_torch_distributed()`` connects the ranks.
Off the platform it starts one process unless TORCHRUN_ARGS say otherwise.

``--trial`` runs a Trial class under this launcher: every rank runs the trial runner
(rank 0 talks to the trial's host).
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import socket
import subprocess
import sys
from typing import List, Optional, Tuple

from determined.launch._command import forward_signals, resolve_command
from determined.launch._ports import rendezvous_port

logger = logging.getLogger("determined.launch")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def parse_args(args: List[str]) -> Tuple[List[str], List[str], Optional[str]]:
    """(torchrun overrides, command, trial entrypoint or None)."""
    overrides: List[str] = []
    if "--" in args:
        split = args.index("--")
        overrides, args = args[:split], args[split + 1:]
        if "--trial" in overrides:  # ``--trial X --`` is the trial form, not overrides
            i = overrides.index("--trial")
            args = overrides[i:] + args
            overrides = overrides[:i]
    parser = argparse.ArgumentParser(
        prog="python3 -m determined.launch.torch_distributed",
        usage="%(prog)s [TORCHRUN_ARGS... --] (--trial TRIAL | CMD...)",
        description="Launch a training command (or a Trial class) under torchrun, one "
                    "process per slot of the trial.")
    parser.add_argument("--trial", help="a Trial class (module:Class) to run on every rank")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="CMD")
    parsed = parser.parse_args(args)
    if parsed.trial is not None and parsed.command:
        parser.error(f"--trial takes no command; received also: {' '.join(parsed.command)}")
    if parsed.trial is None and not parsed.command:
        parser.error("expected a command to launch (or --trial module:Class)")
    return overrides, list(parsed.command), parsed.trial


def launch_plan(info: object, trial: Optional[str]) -> Tuple[List[str], dict]:
    """(torchrun arguments before the overrides, environment additions)."""
    from determined.core._distributed import DEFAULT_PORT

    env = {"USE_TORCH_DISTRIBUTED": "True"}
    if info is None:
        nnodes, nproc, node_rank, chief = 1, 1, 0, "127.0.0.1"
    else:
        addrs = list(info.container_addrs)  # type: ignore[attr-defined]
        nnodes, nproc = len(addrs), len(info.slot_ids)  # type: ignore[attr-defined]
        node_rank, chief = info.container_rank, addrs[0]  # type: ignore[attr-defined]
    if nnodes == 1:
        chief = "127.0.0.1"
        # Ports free now, so trials sharing this machine do not collide.
        rendezvous = _free_port()
        env["DET_UNIQUE_PORT_OFFSET"] = str(_free_port() - DEFAULT_PORT)
        env.setdefault("DET_DIST_AUTHKEY", secrets.token_hex(16))
    else:
        offset = int(os.environ.get("DET_UNIQUE_PORT_OFFSET", "0") or 0)
        rendezvous = rendezvous_port(offset)
    env["DET_CHIEF_IP"] = chief
    args = ["--nnodes", str(nnodes), "--nproc_per_node", str(max(1, nproc)),
            "--node_rank", str(node_rank), "--max_restarts", "0",
            "--master_addr", chief, "--master_port", str(rendezvous)]
    return args, env


def main(argv: Optional[List[str]] = None) -> int:
    overrides, command, trial = parse_args(sys.argv[1:] if argv is None else argv)
    import determined as det

    info = det.get_cluster_info()
    if trial is not None:
        command = [sys.executable, "-m", "determined.launch._trial_rank", trial]
    torchrun_args, env_add = launch_plan(info, trial)
    cmd = [sys.executable, "-m", "torch.distributed.run", *torchrun_args, *overrides,
           "--module", "determined.launch.wrap_rank", "RANK", "--", *resolve_command(command)]
    env = dict(os.environ)
    env.update(env_add)
    logger.info("launching: %s", " ".join(cmd))
    proc = subprocess.Popen(cmd, env=env)
    with forward_signals(proc):
        code = proc.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
