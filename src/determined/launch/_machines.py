"""One machine's part of a trial spanning machines, as every launcher (remote agents,
Ray nodes) starts it: the part's place among the trial's machines (:func:`part_ranks`),
what a script on it learns from ``det.get_cluster_info()`` (:func:`script_rendezvous`),
its processes (:func:`part_processes`) and their environment (:func:`part_env`).

A Trial class runs one process per slot (rank 0: the trial runner, the others
:data:`RANK_MODULE`); a script trial runs one process per machine (the chief's: the
trial runner, which runs the script and serves its link; the others
:data:`SCRIPT_PART_MODULE`), the script starting that machine's ranks itself. The
chief's launcher picks a free port offset for a script (:func:`chief_port`), and the
others recover it from the rendezvous port.

When the chief's part ends cleanly, the other parts get :data:`CHIEF_GRACE_SECONDS` to
exit by themselves; launchers then kill the rest and say so with
:data:`OUTLIVED_CHIEF`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import socket
from typing import Any, Dict, List, Optional, Sequence

from determined.launch._ports import free_port_offset, offset_of, rendezvous_port

__all__ = ["CHIEF_GRACE_SECONDS", "OUTLIVED_CHIEF", "RANK_MODULE", "SCRIPT_PART_MODULE",
           "PartProcess", "chief_port", "meet_at", "part_env", "part_processes", "part_ranks",
           "script_rendezvous"]

#: The entry of ranks > 0 of a Trial class (rank 0 runs the trial runner).
RANK_MODULE = "determined.harness._rank_main"
#: What a script trial's machines other than the chief's run (the script, no link).
SCRIPT_PART_MODULE = "determined.harness._script_part"
#: Seconds the other parts get to exit after the chief's part ended cleanly (default of
#: the master's ``resource_manager.chief_grace``).
CHIEF_GRACE_SECONDS = 60.0
#: The trial's log line (and the master's log message) when parts outlived that grace.
OUTLIVED_CHIEF = ("det-master: parts of the trial still run after its chief ended "
                  "{grace:g} s ago; killing them")


def part_ranks(slot_counts: Sequence[int], addrs: Sequence[str]) -> List[Dict[str, Any]]:
    """Each machine's ``ranks`` (the chief's first): its first rank, the trial's size and
    machine count, whether it is the chief, its ``node_rank``, every machine's address
    and slot count. The rendezvous (``master_addr``/``master_port``) is added once the
    chief's launcher picked it."""
    size, first, out = sum(slot_counts), 0, []
    for node_rank, count in enumerate(slot_counts):
        out.append({"first": first, "size": size, "num_agents": len(slot_counts),
                    "chief": first == 0, "node_rank": node_rank, "addrs": list(addrs),
                    "slot_counts": [int(n) for n in slot_counts]})
        first += int(count)
    return out


def meet_at(ranks: Dict[str, Any], host: str, port: int) -> None:
    """Add where the chief's rank 0 listens to a machine's ``ranks`` (the chief's
    address replaces its first address)."""
    ranks.update(master_addr=host, master_port=int(port), addrs=[host] + list(ranks["addrs"][1:]))


def chief_port(script: bool) -> int:
    """The port rank 0 listens on, free on every interface now (rank 0 binds it moments
    later): for a script, torchrun's rendezvous port of a free per-trial offset."""
    if script:
        return rendezvous_port(free_port_offset())
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def script_rendezvous(ranks: Dict[str, Any], chief_addr: str) -> Dict[str, Any]:
    """The trial's machines as ``det.get_cluster_info()`` tells a script on this one
    (the chief's address: where its ranks meet)."""
    addrs = [str(a) for a in ranks.get("addrs") or []] or [chief_addr] * int(ranks["num_agents"])
    return {"container_addrs": [chief_addr] + addrs[1:],
            "container_rank": int(ranks["node_rank"]),
            "container_slot_counts": [int(n) for n in ranks["slot_counts"]]}


def part_env(ranks: Dict[str, Any], slot_ids: Sequence[int], token: str, addr: str,
             port: int, script: bool) -> Dict[str, str]:
    """The variables every process of the part shares (the launcher adds where the
    master and the spec are, and each process's ``DET_RANK``/``DET_LOCAL_RANK``)."""
    env = {"DET_TRIAL_TOKEN": token, "DET_SLOT_IDS": ",".join(map(str, slot_ids)),
           "DET_SIZE": str(ranks["size"]), "DET_LOCAL_SIZE": str(len(slot_ids)),
           "DET_NUM_AGENTS": str(ranks["num_agents"]),
           "DET_NODE_RANK": str(ranks["node_rank"]),
           "MASTER_ADDR": addr, "MASTER_PORT": str(port)}
    if script:  # its ranks meet at ports of this offset
        env["DET_UNIQUE_PORT_OFFSET"] = str(offset_of(port))
        # Every part has the trial's token: the key of the Core API's group.
        env["DET_DIST_AUTHKEY"] = hashlib.sha256(token.encode()).hexdigest()[:32]
    return env


@dataclasses.dataclass(frozen=True)
class PartProcess:
    """One process of a part: its rank, local rank, module (None: the trial runner)
    and the prefix of its output lines in the trial's log: none for a Trial class's
    rank, whose log lines name it as a local run's do (``12:04:31 INFO [rank 1] ...``,
    :mod:`determined.harness._rank_logs`)."""

    rank: int
    local_rank: int
    module: Optional[str]
    prefix: str


def part_processes(ranks: Dict[str, Any], slots: int, script: bool) -> List[PartProcess]:
    """The processes of a part of ``slots`` slots (see the module docstring)."""
    out = []
    for local_rank in range(1 if script else slots):
        rank = int(ranks["first"]) + local_rank
        if rank == 0:
            module, prefix = None, ""
        elif script:
            module, prefix = SCRIPT_PART_MODULE, f"[machine {ranks.get('node_rank')}] "
        else:
            module, prefix = RANK_MODULE, ""
        out.append(PartProcess(rank, local_rank, module, prefix))
    return out
