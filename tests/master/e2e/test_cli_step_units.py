"""``det`` against a real master names a script's steps in its searcher's unit.

A script entrypoint with ``max_length: {epochs: 3}`` reports its steps in epochs: the
human-readable tables of ``det e describe``, ``det e lt``, ``det t describe``,
``det e list-checkpoints`` and ``det t download``, ``det checkpoint describe`` and the
``--follow`` status line say epochs; a Trial class's are still batches; ``--json`` and
``--csv`` keep the ``total_batches`` key."""

import csv
import io
import json
import pathlib
import re

import pytest
import yaml

from det_cli_testing import run_det, table_headers, table_lines

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures"
SCRIPT_DIR = FIXTURES / "script_trial"
TINY_DIR = FIXTURES / "tiny_pytorch"


def det(master, *args):
    out = run_det(["-m", master.url, *args], timeout=240, env={"COLUMNS": "80"})
    assert out.returncode == 0, f"{args}: {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def write_config(path, source, **changes):
    cfg = yaml.safe_load(source.read_text())
    cfg.update(changes)
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def runs(shared_master, tmp_path_factory):
    """A script experiment in epochs (followed to its end) and a Trial-class one."""
    tmp = tmp_path_factory.mktemp("units")
    script_cfg = write_config(tmp / "epochs.yaml", SCRIPT_DIR / "const.yaml",
                              hyperparameters={"offset": 0.0, "ckpt_every": 2},
                              searcher={"name": "single", "metric": "loss",
                                        "max_length": {"epochs": 3}})
    followed = det(shared_master, "e", "create", script_cfg, SCRIPT_DIR, "-f")
    script_id = int(re.search(r"Created experiment (\d+)", followed.stdout).group(1))
    trial_cfg = write_config(tmp / "batches.yaml", TINY_DIR / "const.yaml",
                             searcher={"name": "single", "metric": "validation_loss",
                                       "max_length": {"batches": 20}})
    created = det(shared_master, "e", "create", trial_cfg, TINY_DIR, "--json")
    trial_id = json.loads(created.stdout)["id"]
    det(shared_master, "e", "wait", trial_id, "--polling-interval", "0.3")
    return {"script": script_id, "trial": trial_id, "followed": followed}


def _trial_of(master, exp_id):
    (exp,) = json.loads(det(master, "e", "describe", exp_id, "--json").stdout)
    (trial,) = exp["trials"]
    return exp, trial


def test_script_tables_say_epochs(shared_master, runs, tmp_path):
    exp_id = runs["script"]
    exp, trial = _trial_of(shared_master, exp_id)
    assert exp["state"] == "COMPLETED" and trial["total_batches"] == 3, exp
    text = det(shared_master, "e", "describe", exp_id).stdout
    assert "epochs" in table_headers(table_lines(text, "Trials")), text
    assert table_headers(table_lines(text, "Workloads"))[:3] == ["exp", "trial", "epochs"], text
    assert "batches" not in text, text
    lt = det(shared_master, "e", "lt", exp_id).stdout
    assert "epochs" in table_headers(lt.splitlines()) and "batches" not in lt, lt
    described = det(shared_master, "t", "describe", trial["id"]).stdout
    assert "epochs" in table_headers(table_lines(described, "Trial")), described
    assert table_headers(table_lines(described, "Workloads"))[:2] == ["trial", "epochs"]
    listed = det(shared_master, "e", "list-checkpoints", exp_id).stdout
    assert table_headers(listed.splitlines())[:2] == ["trial", "epochs"], listed
    uuid = trial["latest_checkpoint"]
    assert re.search(r"^Epoch: +3$", det(shared_master, "checkpoint", "describe", uuid).stdout,
                     re.M)
    out = tmp_path / "ckpt"
    downloaded = det(shared_master, "t", "download", trial["id"], "--latest", "-o", out).stdout
    assert table_headers(downloaded.splitlines()[1:])[0] == "epoch", downloaded
    # The status line of --follow (piped: one line per change) counts epochs.
    assert re.search(r"COMPLETED 100% \| trials: 0 running, 1 completed \| epochs: 3 ",
                     runs["followed"].stderr), runs["followed"].stderr


def test_machine_readable_outputs_keep_total_batches(shared_master, runs):
    exp_id = runs["script"]
    (trial,) = json.loads(det(shared_master, "e", "lt", exp_id, "--json").stdout)
    assert trial["total_batches"] == 3 and "epochs" not in trial, trial
    rows = list(csv.DictReader(io.StringIO(det(shared_master, "e", "lt", exp_id,
                                               "--csv").stdout)))
    assert rows[0]["total_batches"] == "3", rows
    (ck, *_) = json.loads(det(shared_master, "e", "list-checkpoints", exp_id, "--json").stdout)
    assert "total_batches" in ck and "batches" in ck, ck


def test_trial_class_tables_still_say_batches(shared_master, runs):
    exp_id = runs["trial"]
    _, trial = _trial_of(shared_master, exp_id)
    text = det(shared_master, "e", "describe", exp_id).stdout
    assert "batches" in table_headers(table_lines(text, "Trials")), text
    assert table_headers(table_lines(text, "Workloads"))[:3] == ["exp", "trial", "batches"], text
    assert "epochs" not in text, text
    lt = det(shared_master, "e", "lt", exp_id).stdout
    assert "batches" in table_headers(lt.splitlines()), lt
    listed = det(shared_master, "e", "list-checkpoints", exp_id).stdout
    assert table_headers(listed.splitlines())[:2] == ["trial", "batches"], listed
    assert re.search(r"^Batch: +20$", det(shared_master, "checkpoint", "describe",
                                          trial["latest_checkpoint"]).stdout, re.M)
