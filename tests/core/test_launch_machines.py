"""One machine's part of a trial spanning machines, as remote agents and Ray nodes both
build it (determined.launch._machines)."""

import hashlib

from determined.launch import _machines, _ports


def test_each_machine_knows_its_first_rank_and_place_and_the_chief_address_comes_first():
    places = _machines.part_ranks([2, 3], ["10.0.0.1", "10.0.0.2"])
    assert [(p["first"], p["node_rank"], p["chief"]) for p in places] == [
        (0, 0, True), (2, 1, False)]
    assert all(p["size"] == 5 and p["num_agents"] == 2 and p["slot_counts"] == [2, 3]
               for p in places)
    _machines.meet_at(places[1], "192.168.1.5", 29401)
    assert places[1]["addrs"] == ["192.168.1.5", "10.0.0.2"]
    assert _machines.script_rendezvous(places[1], "192.168.1.5") == {
        "container_addrs": ["192.168.1.5", "10.0.0.2"], "container_rank": 1,
        "container_slot_counts": [2, 3]}


def test_a_script_runs_once_per_machine_and_a_trial_class_once_per_slot():
    chief, other = _machines.part_ranks([2, 2], ["a", "b"])
    assert _machines.part_processes(chief, 2, script=True) == [
        _machines.PartProcess(0, 0, None, "")]
    assert _machines.part_processes(other, 2, script=True) == [
        _machines.PartProcess(2, 0, _machines.SCRIPT_PART_MODULE, "[machine 1] ")]
    # A Trial class's ranks name themselves in their log lines: no prefix.
    assert [(p.rank, p.local_rank, p.module, p.prefix) for p in
            _machines.part_processes(other, 2, script=False)] == [
        (2, 0, _machines.RANK_MODULE, ""), (3, 1, _machines.RANK_MODULE, "")]


def test_a_script_part_gets_the_port_offset_and_the_group_key_of_the_token():
    (_, other) = _machines.part_ranks([1, 1], ["a", "b"])
    port = _machines.chief_port(script=True)
    env = _machines.part_env(other, [0], "tok", "a", port, script=True)
    assert int(env["DET_UNIQUE_PORT_OFFSET"]) == _ports.offset_of(port)
    assert env["DET_DIST_AUTHKEY"] == hashlib.sha256(b"tok").hexdigest()[:32]
    assert (env["DET_SIZE"], env["DET_LOCAL_SIZE"], env["DET_NUM_AGENTS"]) == ("2", "1", "2")
    plain = _machines.part_env(other, [0], "tok", "a", _machines.chief_port(False), False)
    assert "DET_UNIQUE_PORT_OFFSET" not in plain and "DET_DIST_AUTHKEY" not in plain


def test_an_uneven_split_gives_each_rank_its_machine_and_local_size():
    from determined import RendezvousInfo
    from determined.harness._ranks import info_from_environ

    seen = []
    for ranks, slots in zip(_machines.part_ranks([2, 1], ["a", "b"]), [(0, 1), (3,)]):
        env = _machines.part_env(ranks, slots, "tok", "a", 29500, script=False)
        for proc in _machines.part_processes(ranks, len(slots), script=False):
            info = info_from_environ(dict(env, DET_RANK=str(proc.rank),
                                          DET_LOCAL_RANK=str(proc.local_rank)))
            seen.append((info.rank, info.local_rank, info.local_size, info.node_rank,
                         info.num_agents, RendezvousInfo.from_distributed_info(info).get_rank()))
        assert env["DET_SLOT_IDS"] == ",".join(map(str, slots))
    assert seen == [(0, 0, 2, 0, 2, 0), (1, 1, 2, 0, 2, 0), (2, 0, 1, 1, 2, 1)]
