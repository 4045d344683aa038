"""An adaptive_asha search of examples/digits_pytorch on a real master through the CLI:
rungs respected, trials waiting for a rung decision give their slot away, every
metric stored, the experiment COMPLETED."""

import subprocess
import sys
import time
from typing import Dict, List, Set

import yaml

from det_cli_testing import run_det
from master_testing import create_experiment, metric_rows, slot_tasks, wait_for_state, wait_until

RUNG, MAX_LENGTH = 40, 80  # divisor 2, two rungs: [40, 80] batches


def _shrunk_config(examples_dir, tmp_path) -> str:
    config = yaml.safe_load((examples_dir / "digits_pytorch" / "adaptive.yaml").read_text())
    config["scheduling_unit"] = 20
    config["searcher"].update(max_trials=4, max_length={"batches": MAX_LENGTH}, divisor=2,
                              max_rungs=2, mode="aggressive")
    path = tmp_path / "asha.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _held(api) -> Set[int]:
    return {int(t.split("-")[1]) for t in slot_tasks(api) if t}


def _suspended(api, exp_id: int) -> Set[int]:
    """Trials that trained a rung, are not finished and hold no slot (before and after
    reading the trials, so a trial starting or exiting meanwhile does not count)."""
    held = _held(api)
    trials = api.get(f"/experiments/{exp_id}/trials").json()["trials"]
    held |= _held(api)
    return {t["id"] for t in trials
            if t["state"] == "ACTIVE" and t["total_batches"] >= RUNG and t["id"] not in held}


def _check_search(api, exp_id: int) -> Dict[int, int]:
    """Rungs respected, metrics stored once each, best of rung 0 promoted; trial lengths."""
    exp = api.get(f"/experiments/{exp_id}").json()
    assert exp["state"] == "COMPLETED" and exp["progress"] == 1.0, exp
    trials = exp["trials"]
    assert len(trials) == 4
    assert all(t["state"] == "COMPLETED" for t in trials), trials
    lengths: Dict[int, int] = {t["id"]: t["total_batches"] for t in trials}
    assert set(lengths.values()) <= {RUNG, MAX_LENGTH}, lengths
    assert RUNG in lengths.values() and MAX_LENGTH in lengths.values(), lengths

    rung0: Dict[int, float] = {}
    for t in trials:
        rows = metric_rows(api, t["id"])
        expected: List = []
        for b in range(20, lengths[t["id"]] + 1, 20):
            expected.append(("training", b))
            if b % RUNG == 0:
                expected.append(("validation", b))
        assert [(k, b) for k, b, _ in rows] == expected, (t["id"], rows)
        assert all("loss" in m for k, _, m in rows if k == "training")
        rung0[t["id"]] = next(m["validation_error"] for k, b, m in rows
                              if k == "validation" and b == RUNG)
        assert t["best_validation"] == min(m["validation_error"] for k, _, m in rows
                                           if k == "validation")
    # Whatever the order results came in, the best trial of rung 0 was promoted.
    best = min(rung0, key=rung0.get)
    assert lengths[best] == MAX_LENGTH, (rung0, lengths)
    ckpts = api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
    for trial_id, length in lengths.items():  # each trial's final checkpoint is kept
        kept = [c["total_batches"] for c in ckpts
                if c["trial_id"] == trial_id and c["state"] == "COMPLETED"]
        assert max(kept) == length, (trial_id, ckpts)
    return lengths


def test_asha_search_completes_through_cli(master_factory, examples_dir, tmp_path):
    master = master_factory(slots=2)
    config = _shrunk_config(examples_dir, tmp_path)
    out = run_det(["-m", master.url, "e", "create", config, examples_dir / "digits_pytorch"],
                  timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Created experiment 1" in out.stdout

    # Four trials may run at once (ASHA's concurrency) on two slots: the other two only
    # get a slot when a trial that finished rung 0 and waits for the rung's decision
    # checkpoints and exits (rung 0 closes only once all four have reported).
    wait = subprocess.Popen(
        [sys.executable, "-m", "determined.cli", "-m", master.url, "e", "wait", "1",
         "--polling-interval", "0.3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    suspended: Set[int] = set()
    on_slot_ever: Set[int] = set()
    try:
        deadline = time.monotonic() + 240
        with master.client() as api:
            while wait.poll() is None:
                assert time.monotonic() < deadline, (
                    "search did not finish: " + str(api.get("/experiments/1").json()["trials"]))
                on_slot_ever |= _held(api)
                suspended |= _suspended(api, 1)
                time.sleep(0.1)
        stdout, stderr = wait.communicate(timeout=10)
    finally:
        if wait.poll() is None:
            wait.kill()
            wait.wait()
    assert wait.returncode == 0, stdout + stderr
    assert "COMPLETED" in stdout + stderr

    with master.client() as api:
        lengths = _check_search(api, 1)
    assert on_slot_ever == set(lengths), "every trial ran"
    assert suspended, "no trial waiting for its rung's decision gave its slot away"


def test_asha_survives_master_sigkill_while_a_trial_waits(master_factory, examples_dir,
                                                          tmp_path):
    """Restored from the database, a suspended trial stays idle (it does not take a slot
    back to redo finished work) and the search completes as if nothing happened."""
    master = master_factory(slots=2)
    config = yaml.safe_load(open(_shrunk_config(examples_dir, tmp_path)))
    with master.client() as api:
        exp_id = create_experiment(api, config, examples_dir / "digits_pytorch")
        waiting = wait_until(lambda: _suspended(api, exp_id), timeout=120,
                             what="a trial waiting for its rung's decision")
    master.sigkill()
    again = master_factory(slots=2, data_dir=master.data_dir, port=master.port)
    with again.client() as api:
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=240)
        assert exp["state"] == "COMPLETED", exp
        lengths = _check_search(api, exp_id)
    assert waiting <= set(lengths)
