"""The master on the experiment core: defects of issue 14 on a real master."""

import sqlite3

import pytest

from master_testing import (
    create_experiment,
    slot_tasks,
    slow_model_dir,
    wait_for_state,
    wait_until,
)

pytestmark = pytest.mark.e2e


def _asha(max_slots=None):
    cfg = {
        "entrypoint": "slow_def:SlowTrial",
        "scheduling_unit": 5,
        "hyperparameters": {"global_batch_size": 16, "dropout": 0.2, "sleep": 0.01,
                            "lr": {"type": "double", "minval": 0.01, "maxval": 0.3}},
        "searcher": {"name": "adaptive_asha", "metric": "validation_loss", "max_trials": 4,
                     "max_length": {"batches": 40}, "divisor": 2, "max_rungs": 2,
                     "max_concurrent_trials": 2},
        "max_restarts": 1,
    }
    if max_slots is not None:
        cfg["resources"] = {"max_slots": max_slots}
    return cfg


def test_asha_at_max_slots_completes_and_max_slots_edit_survives_restart(
        master_factory, tiny_dir, tmp_path):
    """adaptive_asha with max_slots 1 on a 2-slot master: idle trials give the one slot
    back, so the search ends; a max_slots edit still holds after a master restart."""
    model_dir = slow_model_dir(tiny_dir, tmp_path)
    master = master_factory(slots=2)
    with master.client() as api:
        exp = create_experiment(api, _asha(max_slots=1), model_dir)
        done = wait_for_state(api, exp, ["COMPLETED", "ERROR", "CANCELED"], timeout=150)
        assert done["state"] == "COMPLETED", done
        # A second experiment limited to one slot by an edit, then the master restarts.
        cfg = _asha()
        cfg["hyperparameters"]["sleep"] = 0.05
        exp2 = create_experiment(api, cfg, model_dir, activate=False)
        assert api.patch(f"/experiments/{exp2}", json={"max_slots": 1}).status_code == 200
    master.stop()
    again = master_factory(slots=2, data_dir=master.data_dir, port=master.port)
    with again.client() as api:
        assert api.post(f"/experiments/{exp2}/activate").status_code == 200
        seen = []

        def finished():
            seen.append(sum(1 for t in slot_tasks(api) if t))
            return api.get(f"/experiments/{exp2}").json()["state"] in (
                "COMPLETED", "ERROR", "CANCELED")

        wait_until(finished, timeout=150, what="the edited experiment to finish")
        assert max(seen) == 1, seen
        assert api.get(f"/experiments/{exp2}").json()["state"] == "COMPLETED"


def test_unrestorable_experiment_is_error_and_warm_start_on_master(
        master_factory, tiny_dir, tmp_path):
    master = master_factory(slots=1)
    cfg = {"entrypoint": "model_def:TinyTrial", "scheduling_unit": 10,
           "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2},
           "searcher": {"name": "single", "metric": "validation_loss",
                        "max_length": {"batches": 20}}}
    with master.client() as api:
        src = create_experiment(api, cfg, tiny_dir)
        done = wait_for_state(api, src, ["COMPLETED", "ERROR", "CANCELED"])
        assert done["state"] == "COMPLETED", done
        (src_trial,) = done["trials"]
        src_ckpt = src_trial["latest_checkpoint"]
        # Warm starts: every trial of every searcher starts from the source checkpoint.
        warm = dict(cfg, searcher=dict(cfg["searcher"], name="random", max_trials=2,
                                       source_trial_id=src_trial["id"]))
        w = create_experiment(api, warm, tiny_dir)
        done = wait_for_state(api, w, ["COMPLETED", "ERROR", "CANCELED"])
        assert done["state"] == "COMPLETED", done
        assert [t["warm_start_checkpoint"] for t in done["trials"]] == [src_ckpt] * 2
        logs = [l["line"] for l in
                api.get(f"/trials/{done['trials'][0]['id']}/logs").json()["logs"]]
        assert f"[determined] Trial starts, warm-started from checkpoint {src_ckpt}" in logs
        by_uuid = dict(cfg, searcher=dict(cfg["searcher"], source_checkpoint_uuid=src_ckpt))
        u = create_experiment(api, by_uuid, tiny_dir, activate=False)
        broken = create_experiment(api, cfg, tiny_dir, activate=False)
        assert api.get(f"/experiments/{u}").json()["trials"][0][
            "warm_start_checkpoint"] == src_ckpt
    master.stop()
    db = sqlite3.connect(f"{master.data_dir}/master.db")
    db.execute("UPDATE searcher_snapshots SET snapshot = '{\"version\": 99}' "
               "WHERE experiment_id = ?", (broken,))
    db.commit()
    db.close()
    again = master_factory(slots=1, data_dir=master.data_dir, port=master.port)
    with again.client() as api:
        exp = api.get(f"/experiments/{broken}").json()
        assert exp["state"] == "ERROR", exp
        assert exp["trials"][0]["state"] == "ERROR"
        logs = [l["line"] for l in
                api.get(f"/trials/{exp['trials'][0]['id']}/logs").json()["logs"]]
        assert any("could not be restored at master start" in l and "version" in l
                   for l in logs), logs
        # The master serves every other experiment.
        assert api.post(f"/experiments/{u}/activate").status_code == 200
        done = wait_for_state(api, u, ["COMPLETED", "ERROR", "CANCELED"])
        assert done["state"] == "COMPLETED", done
