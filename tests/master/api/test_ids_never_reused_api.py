"""A real master, on its default database (SQLite) and on PostgreSQL: deleting the
newest experiment (``DELETE /experiments/{id}``, what ``det e delete`` sends) never lets
the next one take its id, nor its trials' ids, also after a master restart."""

import pytest
import yaml
from master_testing import create_experiment, wait_for_state, wait_until


def _config(tiny_dir):
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config["searcher"] = {**config["searcher"], "name": "random", "max_trials": 2}
    return config


def _trial_ids(api, exp_id):
    """The experiment's trial ids, once its searcher has made both trials."""
    def made():
        trials = api.get(f"/experiments/{exp_id}").json()["trials"]
        return [t["id"] for t in trials] if len(trials) == 2 else None
    return wait_until(made, what=f"the trials of experiment {exp_id}")


def _finish(api, exp_id):
    assert api.post(f"/experiments/{exp_id}/kill").status_code == 200
    wait_for_state(api, exp_id, ["CANCELED"])


def _delete(api, exp_id):
    r = api.delete(f"/experiments/{exp_id}")
    assert r.status_code == 200, r.text
    assert api.get(f"/experiments/{exp_id}").status_code == 404


@pytest.fixture(params=["sqlite", "postgresql"])
def start_master(request, master_factory, config_master_factory):
    """``start(data_dir=None)``: a master with no slots (trials are made, none runs) on
    the backend, its database kept across starts with the same ``data_dir``."""
    if request.param == "sqlite":
        return lambda data_dir=None: master_factory(slots=0, data_dir=data_dir)
    config = {"db": request.getfixturevalue("postgres_server").new_database(),
              "resource_manager": {"slots": 0}}
    return lambda data_dir=None: config_master_factory(config, data_dir=data_dir)


def test_deleting_the_newest_experiment_frees_no_ids(start_master, tiny_dir):
    config = _config(tiny_dir)
    master = start_master()
    with master.client() as api:
        first = create_experiment(api, config, tiny_dir)
        first_trials = _trial_ids(api, first)
        newest = create_experiment(api, config, tiny_dir)
        newest_trials = _trial_ids(api, newest)
        _finish(api, newest)
        _delete(api, newest)

        again = create_experiment(api, config, tiny_dir)
        again_trials = _trial_ids(api, again)
        assert again > newest > first, (first, newest, again)
        assert min(again_trials) > max(newest_trials) > max(first_trials), (
            first_trials, newest_trials, again_trials)
        _finish(api, again)
        _delete(api, again)

    master.stop()
    restarted = start_master(data_dir=master.data_dir)
    with restarted.client() as api:
        latest = create_experiment(api, config, tiny_dir)
        assert latest > again, (again, latest)
        assert min(_trial_ids(api, latest)) > max(again_trials)
        ids = [e["id"] for e in api.get("/experiments").json()["experiments"]]
        assert sorted(ids) == [first, latest]
