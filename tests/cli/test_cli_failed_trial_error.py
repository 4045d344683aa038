"""How ``det experiment wait`` and ``det experiment create --test`` end on a master when a
trial failed: the trial's error (bounded, as ``det trial describe`` shows it) and then
where its whole log is, as ``det experiment create --follow`` ends; a real master runs a
script that fails with a message."""

import json
import pathlib
import sys

import pytest
import yaml

from det_cli_testing import run_det

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))
from master_testing import MasterProcess  # noqa: E402

pytestmark = pytest.mark.timeout(600)

FAILS = '''import sys
print("loading data", flush=True)
sys.exit("lightning is not installed: pip install lightning")
'''
#: The trial's error as ``det trial describe`` shows it, after its first line.
WHY = ["loading data", "lightning is not installed: pip install lightning"]


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = MasterProcess(str(tmp_path_factory.mktemp("master")), slots=1).start()
    yield m
    m.stop()


@pytest.fixture
def failing(tmp_path):
    """A model directory whose script exits with a message, and its config's path."""
    d = tmp_path / "fails"
    d.mkdir()
    (d / "train.py").write_text(FAILS)
    config = {"name": "fails", "entrypoint": "python3 train.py", "max_restarts": 0,
              "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 2}}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    return d, tmp_path / "config.yaml"


def det(master, *args, code=0):
    out = run_det(["-m", master.url, *args], timeout=240)
    assert out.returncode == code, f"{args}: {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def test_wait_on_a_failed_experiment_shows_its_trial_error(master, failing):
    """It printed ``Experiment N: ERROR`` alone: the followed experiment's last lines
    follow it, which trial failed and why (as ``det e create --follow`` ends)."""
    model, config = failing
    exp_id = det(master, "e", "create", config, model).stdout.split("Created experiment ")[1]
    exp_id = exp_id.split()[0]
    out = det(master, "e", "wait", exp_id, "--polling-interval", "0.3", code=1)
    assert out.stdout.splitlines() == [f"Experiment {exp_id}: ERROR"], out.stdout
    (trial,) = json.loads(det(master, "e", "lt", exp_id, "--json").stdout)
    tid = trial["id"]
    assert out.stderr.strip().splitlines()[-4:] == [
        f"1 trial failed: {tid}; its log: `det trial logs {tid}`",
        f"Trial {tid} failed (exit code 1): its last output:", *WHY], out.stderr
    # The same lines as `det trial describe` shows the error with.
    described = det(master, "t", "describe", tid).stdout.splitlines()
    start = described.index(f"Trial {tid} failed (exit code 1): its last output:")
    assert described[start + 1:start + 3] == WHY, described


def test_a_failed_test_mode_run_shows_its_trial_error_before_the_pointer(master, failing):
    """``--test`` ended on "its logs are above, or see `det trial logs N`" alone: the
    trial's error comes first (the log above may be long)."""
    model, config = failing
    out = det(master, "e", "create", config, model, "--test", code=1)
    lines = [line for line in out.stderr.strip().splitlines() if line.strip()]
    end = next(i for i, line in enumerate(lines) if "Model definition test failed" in line)
    tid = lines[end].split("(trial ")[1].split(";")[0]
    assert lines[end - 3:end] == [f"Trial {tid} failed (exit code 1): its last output:", *WHY], \
        out.stderr
    assert f"`det trial logs {tid}`" in " ".join(lines[end:]), out.stderr


def test_failure_lines_doctests():
    import doctest

    from determined.cli import _failures

    assert doctest.testmod(_failures).failed == 0
