"""Following an experiment that gets killed returns promptly: ``det experiment create
--follow`` of a running experiment and of one whose trial is still queued, and ``det
trial logs -f`` of the running trial, each end within seconds of ``det experiment
kill`` (a 30 s wait was once reported: the follower drained a log whose end it waited
for until its time limit)."""

import subprocess
import sys
import time

import pytest
import yaml

from det_cli_testing import run_det
from master_testing import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

#: How long after the kill a follower may take to return.
PROMPT = 15.0

_TICKS = """
import time

i = 0
while True:
    print(f"tick {i}", flush=True)
    i += 1
    time.sleep(0.1)
"""


def _det(master, out_path, *args):
    out = open(out_path, "w")
    return subprocess.Popen([sys.executable, "-m", "determined.cli", "-m", master.url,
                             *map(str, args)], stdout=out, stderr=subprocess.STDOUT, text=True)


def _ended_within(proc, deadline, out_path):
    try:
        proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"still following {PROMPT} s after the kill: "
                             f"{out_path.read_text()[-2000:]}") from None


def _trials(api, exp_id):
    r = api.get(f"/experiments/{exp_id}")
    return r.json()["trials"] if r.status_code == 200 else []


def test_followers_return_promptly_when_the_experiment_is_killed(master_factory, tmp_path):
    master = master_factory(slots=1)
    model = tmp_path / "model"
    model.mkdir()
    (model / "ticks.py").write_text(_TICKS)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "name": "ticks", "entrypoint": "python3 ticks.py", "max_restarts": 0,
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 100}},
    }))
    api = master.client()
    procs = []
    try:
        running = _det(master, tmp_path / "running.txt", "e", "create", config, model,
                       "--follow")
        procs.append(running)
        trial = wait_until(lambda: [t["id"] for t in _trials(api, 1)], 60, "the first trial")[0]
        wait_until(lambda: any(line["line"] == "tick 3" for line in
                               api.get(f"/trials/{trial}/logs").json()["logs"]),
                   60, "the trial ticking")
        trial_logs = _det(master, tmp_path / "trial_logs.txt", "t", "logs", "-f", trial)
        procs.append(trial_logs)
        queued = _det(master, tmp_path / "queued.txt", "e", "create", config, model,
                      "--follow")
        procs.append(queued)
        (waiting,) = wait_until(lambda: _trials(api, 2), 60, "the second experiment's trial")
        assert waiting["state"] != "RUNNING"  # the only slot is taken
        time.sleep(1.0)  # the follower is following it

        assert run_det(["-m", master.url, "e", "kill", 2]).returncode == 0
        _ended_within(queued, time.monotonic() + PROMPT, tmp_path / "queued.txt")

        assert run_det(["-m", master.url, "e", "kill", 1]).returncode == 0
        deadline = time.monotonic() + PROMPT
        _ended_within(running, deadline, tmp_path / "running.txt")
        _ended_within(trial_logs, deadline, tmp_path / "trial_logs.txt")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        api.close()
    assert running.returncode == 1 and queued.returncode == 1
    assert "tick 3" in (tmp_path / "running.txt").read_text()
    assert "tick 3" in (tmp_path / "trial_logs.txt").read_text()
