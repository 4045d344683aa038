"""What the tests of trials spanning machines share (remote agents and Ray nodes): the
configs of a Trial class recording each rank's place and of a script whose non-chief
machines outlive the chief, and the check of a 2+1 split of three slots."""

import json
import pathlib
from typing import Any, Callable, Dict, List

import yaml

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
CORE_DIR = FIXTURES / "core_api"
DIST_DIR = FIXTURES / "dist_pytorch"
#: The trial's log line when parts outlived the grace after a clean chief (3 s here).
OUTLIVED_LINE = ("det-master: parts of the trial still run after its chief ended 3 s ago; "
                 "killing them")


def place_trial_config(log_dir: pathlib.Path, slots: int, batches: int = 10) -> Dict[str, Any]:
    """``model_def:PlaceTrial`` (of :data:`DIST_DIR`) on ``slots`` slots; each rank
    writes ``place-<rank>.json`` to ``log_dir``."""
    config = yaml.safe_load((DIST_DIR / "const.yaml").read_text())
    config.update(entrypoint="model_def:PlaceTrial", max_restarts=0,
                  data={"log_dir": str(log_dir)}, resources={"slots_per_trial": slots},
                  searcher=dict(config["searcher"], max_length={"batches": batches}),
                  min_validation_period={"batches": batches})
    return config


def places(log_dir: pathlib.Path, size: int) -> List[Dict[str, Any]]:
    return [json.loads((log_dir / f"place-{r}.json").read_text()) for r in range(size)]


def linger_config(markers: pathlib.Path) -> Dict[str, Any]:
    """``linger.py`` (of :data:`CORE_DIR`) on two slots: the chief's machine completes
    at once, the other's command runs until killed."""
    return {"name": "lingering-machine", "entrypoint": "python3 linger.py",
            "hyperparameters": {"marker_dir": str(markers)},
            "searcher": {"name": "single", "metric": "validation_loss",
                         "max_length": {"batches": 1}},
            "resources": {"slots_per_trial": 2}, "max_restarts": 0}


def check_two_and_one(ranks: List[Dict[str, Any]],
                      agent_of: Callable[[Dict[str, Any]], Any] = lambda p: p["agent_id"]
                      ) -> None:
    """Three ranks on a two-slot machine and a one-slot one: contiguous global ranks,
    each machine's local ranks, the torch world, ranks 0 and 1 on one machine."""
    assert sorted(p["rank"] for p in ranks) == [0, 1, 2], ranks
    for p in ranks:
        machine = 0 if p["rank"] < 2 else 1
        assert p["container_rank"] == machine, ranks
        assert p["local_rank"] == p["rank"] - 2 * machine, ranks
        assert p["torch_rank"] == p["rank"] and p["torch_size"] == 3, ranks
        assert (agent_of(p) == agent_of(ranks[0])) == (machine == 0), ranks


def check_script_two_and_one(ranks: List[Dict[str, Any]]) -> None:
    """:func:`check_two_and_one` for ``span_core.py``'s records, with each machine's
    size and slots as ``det.get_cluster_info()`` and torchrun gave them."""
    check_two_and_one(ranks)
    for info in ranks:
        local_size = 2 if info["rank"] < 2 else 1
        assert info["local_size"] == local_size and len(info["slot_ids"]) == local_size, ranks
        assert info["cross_rank"] == info["container_rank"] and info["cross_size"] == 2, ranks
        assert info["size"] == 3 and info["container_slot_counts"] == [2, 1], ranks


def check_trial_two_and_one(ranks: List[Dict[str, Any]], part_slots: bool = True) -> None:
    """:func:`check_two_and_one` for ``PlaceTrial``'s records (one process per slot);
    ``part_slots``: each rank's ``DET_SLOT_IDS`` names its machine's slots of the
    trial (else each rank has its own, as a Ray actor per rank with GPUs)."""
    check_two_and_one(ranks, agent_of=lambda p: p["det_agent_id"])
    for p in ranks:
        local_size = 2 if p["rank"] < 2 else 1
        assert p["size"] == 3 and p["num_agents"] == 2, ranks
        assert p["det_local_size"] == str(local_size), ranks
        slots = len(p["det_slot_ids"].split(","))
        assert slots == (local_size if part_slots else 1), ranks
        assert p["det_node_rank"] == str(p["container_rank"]), ranks
