"""The master on PostgreSQL (``db`` in its config file): an experiment runs to
completion across a SIGKILL of the master, with every metric stored exactly once."""

import json
import os
import subprocess
import sys
import threading

import httpx

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


CHATTY_TRIAL = '''"""TinyTrial printing a few numbered lines per batch (a trial that logs a lot)."""
from model_def import TinyTrial


class ChattyTrial(TinyTrial):
    def train_batch(self, batch, epoch_idx, batch_idx):
        tag = self.context.get_hparams()["tag"]
        for k in range(4):
            print(f"chatty {tag} batch {batch_idx} line {k}", flush=True)
        return super().train_batch(batch, epoch_idx, batch_idx)
'''


def _read_events(response, out):
    """Append (event name, data) of a ``/ui/events`` stream until it closes."""
    name = None
    try:
        for line in response.iter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                out.append((name, json.loads(line[5:])))
    except httpx.HTTPError:  # the test closed the stream
        pass


def test_tails_on_postgres_miss_nothing_while_two_trials_log(postgres_server,
                                                             config_master_factory,
                                                             tiny_dir, tmp_path):
    """Two trials log and report metrics at once into PostgreSQL: ``det trial logs -f``
    of each prints every stored line once, in order, and one ``/ui/events`` channel
    (the experiment page) gets every metrics row of both trials and every line of one."""
    master = config_master_factory({"db": postgres_server.new_database(),
                                    "resource_manager": {"slots": 2}})
    model_dir = slow_model_dir(tiny_dir, tmp_path)
    with open(os.path.join(model_dir, "chatty_def.py"), "w") as f:
        f.write(CHATTY_TRIAL)
    config = {
        "entrypoint": "chatty_def:ChattyTrial", "scheduling_unit": 5,
        "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2,
                            "tag": {"type": "categorical", "vals": ["a", "b"]}},
        "searcher": {"name": "grid", "metric": "validation_loss",
                     "max_length": {"batches": 150}},
        "min_validation_period": {"batches": 50},
    }
    env = dict(os.environ, HOME=str(tmp_path), DET_MASTER=master.url)
    with master.client() as api:
        exp_id = create_experiment(api, config, model_dir)

        def both_trials():
            listed = api.get(f"/experiments/{exp_id}/trials").json()["trials"]
            return [t["id"] for t in listed] if len(listed) == 2 else None

        trials = wait_until(both_trials, timeout=180, what="two trials")
        followers = [subprocess.Popen([sys.executable, "-m", "determined.cli", "trial", "logs",
                                       "-f", str(t)], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for t in trials]
        events = []
        with httpx.Client(base_url=master.url, timeout=60) as c:
            params = {"experiment_id": exp_id, "trial_id": trials[0], "metrics_after": 0,
                      "logs_after": 0}
            with c.stream("GET", "/api/v1/ui/events", params=params) as response:
                assert response.status_code == 200
                threading.Thread(target=_read_events, args=(response, events),
                                 daemon=True).start()
                exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=300)
                assert exp["state"] == "COMPLETED", exp
                stored_metrics = sorted((t, m["kind"], m["total_batches"]) for t in trials
                                        for m in api.get(f"/trials/{t}").json()["metrics"])
                stored_lines = {t: api.get(f"/trials/{t}/logs", params={"limit": 100000}).json()[
                    "logs"] for t in trials}

                def sent(name):
                    return [row for n, rows in list(events) if n == name for row in rows]

                wait_until(lambda: len(sent("metrics")) >= len(stored_metrics)
                           and len(sent("logs")) >= len(stored_lines[trials[0]]),
                           timeout=60, what="the channel to send every row")
        metric_ids = [row["id"] for row in sent("metrics")]
        assert metric_ids == sorted(set(metric_ids))  # in id order, each once
        assert sorted((row["trial_id"], row["kind"], row["total_batches"])
                      for row in sent("metrics")) == stored_metrics
        assert [row["id"] for row in sent("logs")] == [line["id"] for line in
                                                      stored_lines[trials[0]]]
        for trial_id, follower in zip(trials, followers):
            out, err = follower.communicate(timeout=120)
            assert follower.returncode == 0, err
            assert out.splitlines() == [line["line"] for line in stored_lines[trial_id]]
        for trial_id in trials:
            chatty = [line["line"] for line in stored_lines[trial_id] if "chatty" in line["line"]]
            assert len(chatty) == 150 * 4, chatty[-5:]


def test_task_log_tails_on_postgres_miss_nothing_while_two_commands_log(
        postgres_server, config_master_factory, tmp_path):
    """Two commands print at once into PostgreSQL: ``det command logs -f`` of each prints
    every stored line once, in order (as ``det command logs`` does after), and the tasks
    page's channel every line of one."""
    master = config_master_factory({"db": postgres_server.new_database(),
                                    "resource_manager": {"slots": 1}})
    env = dict(os.environ, HOME=str(tmp_path), DET_MASTER=master.url)
    with master.client() as api:
        tasks = [api.post("/tasks", json={"kind": "command", "config": {
            "entrypoint": f"for i in $(seq 1 1200); do echo {name} $i; "
                          "[ $((i % 20)) -eq 0 ] && sleep 0.05; done; true",
            "resources": {"slots": 0}}}).json()["id"] for name in ("first", "second")]
        followers = [subprocess.Popen([sys.executable, "-m", "determined.cli", "command", "logs",
                                       "-f", task_id], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for task_id in tasks]
        events = []
        with httpx.Client(base_url=master.url, timeout=60) as c:
            params = {"tasks": True, "task_id": tasks[0], "task_logs_after": 0}
            with c.stream("GET", "/api/v1/ui/events", params=params) as response:
                assert response.status_code == 200
                threading.Thread(target=_read_events, args=(response, events),
                                 daemon=True).start()
                wait_until(lambda: all(api.get(f"/tasks/{t}").json()["state"] == "TERMINATED"
                                       for t in tasks), timeout=180, what="both commands")
                stored = {t: api.get(f"/tasks/{t}/logs", params={"limit": 100000}).json()["logs"]
                          for t in tasks}

                def sent():
                    return [row["id"] for n, rows in list(events) if n == "task_logs"
                            for row in rows]

                wait_until(lambda: len(sent()) >= len(stored[tasks[0]]), timeout=60,
                           what="the channel to send every line")
        assert sent() == [line["id"] for line in stored[tasks[0]]]
        for task_id, name, follower in zip(tasks, ("first", "second"), followers):
            out, err = follower.communicate(timeout=120)
            assert follower.returncode == 0, err
            assert out.splitlines() == [line["line"] for line in stored[task_id]]
            printed = [line["line"] for line in stored[task_id] if line["line"].startswith(name)]
            assert printed == [f"{name} {i}" for i in range(1, 1201)]
            # Without -f: every line too (more than one page of the API's).
            again = subprocess.run([sys.executable, "-m", "determined.cli", "command", "logs",
                                    task_id], env=env, capture_output=True, text=True,
                                   timeout=120)
            assert again.returncode == 0, again.stderr
            assert again.stdout.splitlines() == out.splitlines()
