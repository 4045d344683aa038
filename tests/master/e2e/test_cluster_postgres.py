"""The master on PostgreSQL (``db`` in its config file): an experiment runs to
completion across a SIGKILL of the master, with every metric stored exactly once."""

import os

from master_testing import create_experiment, slow_model_dir, wait_for_state, wait_until

CONFIG = {
    "entrypoint": "slow_def:SlowTrial",
    "scheduling_unit": 10,
    "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2, "sleep": 0.03},
    "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 60}},
    "min_validation_period": {"batches": 30},
    "min_checkpoint_period": {"batches": 20},
}


def _batches(api, exp_id):
    trials = api.get(f"/experiments/{exp_id}/trials").json()["trials"]
    return trials[0]["total_batches"] if trials else 0


def test_master_on_postgres_survives_sigkill(postgres_server, config_master_factory,
                                             tiny_dir, tmp_path):
    url = postgres_server.new_database()
    master = config_master_factory({"db": url, "resource_manager": {"slots": 1}})
    model_dir = slow_model_dir(tiny_dir, tmp_path)
    with master.client() as api:
        public = api.get("/master/config").json()
        assert public["db"].startswith("postgresql+psycopg://") and "master.db" not in public["db"]
        exp_id = create_experiment(api, CONFIG, model_dir)
        wait_until(lambda: _batches(api, exp_id) >= 30, timeout=120, what="training on PostgreSQL")
    master.sigkill()
    again = config_master_factory(master.config, data_dir=master.data_dir, port=master.port)
    with again.client() as api:
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=120)
        assert exp["state"] == "COMPLETED", exp
        (trial,) = exp["trials"]
        assert trial["total_batches"] == 60 and trial["restarts"] == 0
        metrics = api.get(f"/trials/{trial['id']}").json()["metrics"]
        assert [(m["kind"], m["total_batches"]) for m in metrics] == [
            ("training", 10), ("training", 20), ("training", 30), ("validation", 30),
            ("training", 40), ("training", 50), ("training", 60), ("validation", 60)]
        logs = api.get(f"/trials/{trial['id']}/logs").json()["logs"]
        assert any("exited: completed" in line["line"] for line in logs)
        # A second experiment on the restarted master: ids continue from the database.
        second = create_experiment(api, dict(CONFIG, hyperparameters=dict(
            CONFIG["hyperparameters"], sleep=0.0)), model_dir)
        assert second == exp_id + 1
        assert wait_for_state(api, second, ["COMPLETED", "ERROR", "CANCELED"],
                              timeout=120)["state"] == "COMPLETED"
    assert not os.path.exists(os.path.join(master.data_dir, "master.db"))
