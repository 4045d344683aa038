"""A failed trial's error on a master says why, as a local run's failure line does: a
script that exits with a message (``sys.exit("...")``) or prints and exits non-zero
names its last lines of output, one with a traceback names the exception, and a
Trial class's failure names its exception too. The error is the trial's ``error`` in
the REST API, and ``det trial describe``, ``det experiment describe`` and ``det
experiment create --follow`` show it; its log's line names the last line."""

import pathlib

import pytest
import yaml

from det_cli_testing import run_det
from master_testing import create_experiment, trial_logs, wait_for_state

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

TINY_DIR = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "tiny_pytorch"

EXITS_WITH_A_MESSAGE = '''import sys
print("loading data", flush=True)
sys.exit("lightning is not installed: pip install lightning")
'''

# Seven lines, the last far too long for an error; exit code 3, no traceback.
PRINTS_AND_EXITS = '''import os
for i in range(6):
    print(f"step {i}", flush=True)
print("x" * 5000, flush=True)
os._exit(3)
'''

RAISES = '''def load(path):
    raise FileNotFoundError(f"no data at {path}")

load("/data/train")
'''

# The first run says why it fails; the restart fails without a word: its error must not
# be the first run's.
FAILS_TWICE = '''import os, sys
marker = {marker!r}
if not os.path.exists(marker):
    open(marker, "w").close()
    sys.exit("first run: the disk is full")
sys.exit(2)
'''


def script_dir(tmp_path, name, source, max_restarts=0):
    """A model directory whose script is ``source`` and its config (a dict)."""
    d = tmp_path / name
    d.mkdir()
    (d / "train.py").write_text(source)
    config = {"name": name, "entrypoint": "python3 train.py", "max_restarts": max_restarts,
              "searcher": {"name": "single", "metric": "loss",
                           "max_length": {"batches": 2}}}
    (d / "config.yaml").write_text(yaml.safe_dump(config))
    return d, config


def det(master, *args, code=0):
    out = run_det(["-m", master.url, *args], timeout=180)
    assert out.returncode == code, f"{args}: {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def failed_trial(api, exp_id):
    exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=240)
    (trial,) = exp["trials"]
    assert trial["state"] == "ERROR", exp
    return api.get(f"/trials/{trial['id']}").json()


def test_a_script_exiting_with_a_message_names_it_everywhere(shared_master, tmp_path):
    d, _ = script_dir(tmp_path, "exits", EXITS_WITH_A_MESSAGE)
    out = det(shared_master, "e", "create", d / "config.yaml", d, "-f", code=1)
    exp_id = int(out.stdout.split("Created experiment ")[1].split()[0])
    with shared_master.client() as api:
        trial = failed_trial(api, exp_id)
        log = trial_logs(api, trial["id"])
    tid = trial["id"]
    why = ["its last output:", "loading data",
           "lightning is not installed: pip install lightning"]
    assert trial["error"] == "\n".join([f"Trial failed (exit code 1): {why[0]}", *why[1:]])
    assert ("[determined] Trial failed (exit code 1): lightning is not installed: pip install "
            "lightning; no restarts left (0 of 0 restarts used)") in log.splitlines(), log
    # The followed experiment's last lines: which trial failed, then why.
    assert out.stderr.strip().splitlines()[-5:] == [
        f"Experiment {exp_id} ERROR", f"1 trial failed: {tid}; its log: `det trial logs {tid}`",
        f"Trial {tid} failed (exit code 1): {why[0]}", *why[1:]], out.stderr
    described = det(shared_master, "t", "describe", tid).stdout.splitlines()
    start = described.index(f"Trial {tid} failed (exit code 1): {why[0]}")
    assert described[start + 1:start + 4] == [*why[1:], f"Its whole log: `det trial logs {tid}`"]
    described = det(shared_master, "e", "describe", exp_id).stdout.splitlines()
    start = described.index(f"1 trial failed: {tid}; its log: `det trial logs {tid}`")
    assert described[start + 1:start + 4] == [f"Trial {tid} failed (exit code 1): {why[0]}",
                                              *why[1:]], described


def test_errors_of_a_plain_exit_a_traceback_and_a_restart_are_bounded_and_their_own(
        shared_master, tmp_path):
    runs = [script_dir(tmp_path, "prints", PRINTS_AND_EXITS),
            script_dir(tmp_path, "raises", RAISES),
            script_dir(tmp_path, "twice", FAILS_TWICE.format(marker=str(tmp_path / "ran")),
                       max_restarts=1)]
    with shared_master.client() as api:
        prints, raises, twice = [failed_trial(api, create_experiment(api, config, d))
                                 for d, config in runs]
    # The last 5 lines of its own; the long one cut short.
    lines = prints["error"].splitlines()
    assert lines[:5] == ["Trial failed (exit code 3): its last output:", "step 2", "step 3",
                         "step 4", "step 5"], lines
    assert len(lines) == 6 and lines[5].startswith("xxx") and lines[5].endswith("…")
    assert len(lines[5]) == 300, len(lines[5])
    # The traceback, its path relative to the model directory, ending with the exception.
    lines = raises["error"].splitlines()
    assert lines[0] == "Trial failed (exit code 1): Traceback (most recent call last):", lines
    assert '  File "train.py", line 4, in <module>' in lines, lines
    assert lines[-1] == "FileNotFoundError: no data at /data/train", lines
    # The restart's own failure (it said nothing), not the first run's.
    assert twice["restarts"] == 1 and twice["error"] == "Trial failed (exit code 2)", twice
    with shared_master.client() as api:
        log = trial_logs(api, twice["id"])
    assert "Trial failed (exit code 1): first run: the disk is full; restart 1 of 1" in log, log


def test_a_trial_class_failure_names_its_exception(shared_master, tmp_path):
    cfg = yaml.safe_load((TINY_DIR / "const.yaml").read_text())
    cfg["hyperparameters"]["fail_at_batch"] = 3
    cfg["max_restarts"] = 0
    with shared_master.client() as api:
        trial = failed_trial(api, create_experiment(api, cfg, TINY_DIR))
    lines = trial["error"].splitlines()
    assert lines[0].startswith("Trial failed (exit code "), lines
    assert lines[-1] == "ValueError: planned failure at batch 3", lines
    assert any(line.startswith('  File "model_def.py", line ') for line in lines), lines
    text = det(shared_master, "t", "describe", trial["id"]).stdout
    assert "ValueError: planned failure at batch 3" in text, text
