"""``det experiment label|set|download``, ``det checkpoint``, ``det slot list`` against a master."""

import json
import os

import yaml

from det_cli_testing import run_det


def det(master, *args):
    out = run_det(["-m", master.url, *args], timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_edit_download_and_slots(master_factory, tiny_dir, tmp_path):
    master = master_factory(slots=2)
    config = tmp_path / "c.yaml"
    cfg = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    cfg["searcher"]["max_length"] = {"batches": 20}
    config.write_text(yaml.safe_dump(cfg))
    exp_id = int(det(master, "e", "create", config, tiny_dir, "--json").strip().splitlines()[-1]
                 .split(":")[1].strip(" }"))

    det(master, "e", "label", "add", exp_id, "baseline")
    det(master, "e", "label", "add", exp_id, "digits")
    det(master, "e", "label", "remove", exp_id, "baseline")
    # Nothing to change: the labels as they are, and a note saying so (was silent).
    for action, label, note in (("remove", "baseline", "had no"),
                                ("add", "digits", "already had")):
        same = run_det(["-m", master.url, "e", "label", action, exp_id, label])
        assert (same.returncode, same.stdout) == (0, f"Experiment {exp_id} labels: digits\n")
        assert same.stderr == f"det: experiment {exp_id} {note} label '{label}'\n", same
    det(master, "e", "set", "description", exp_id, "renamed")
    det(master, "e", "set", "weight", exp_id, "2.5")
    det(master, "e", "set", "priority", exp_id, "10")
    det(master, "e", "set", "max-slots", exp_id, "1")
    (exp,) = json.loads(det(master, "e", "describe", exp_id, "--json"))
    assert exp["labels"] == ["digits"] and exp["description"] == "renamed"

    slots = json.loads(det(master, "slot", "list", "--json"))
    assert len(slots) == 2 and {s["slot_id"] for s in slots} == {0, 1}

    out = run_det(["-m", master.url, "e", "wait", exp_id, "--polling-interval", "0.3"], timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr

    paths = det(master, "e", "download", exp_id, "-o", tmp_path / "dl", "-q").split()
    assert len(paths) == 1 and os.path.exists(os.path.join(paths[0], "state_dict.pth"))
    uuid = os.path.basename(paths[0])
    # A metric no checkpoint was validated on: said so, with the metrics there are (was
    # "has no validated checkpoint", wrong: it has one).
    none = run_det(["-m", master.url, "e", "download", exp_id, "--sort-by", "nosuch"])
    assert none.returncode == 1, none
    assert none.stderr == (f"det: error: experiment {exp_id} has no checkpoint validated on "
                           "'nosuch' (its checkpoints' metrics: accuracy, "
                           "validation_loss)\n"), none.stderr
    info = json.loads(det(master, "c", "describe", uuid, "--json"))
    assert info["uuid"] == uuid and info["batch"] == 20 and info["size_bytes"] > 0
    path = det(master, "checkpoint", "download", uuid, "-o", tmp_path / "dl2", "-q").strip()
    # A place it cannot write (nothing can be made in /proc): named as given, not by
    # its scratch directory (was "FileNotFoundError: ... '/proc/.partial-x-1a2b3c4d'").
    bad = run_det(["-m", master.url, "checkpoint", "download", uuid, "-o", "/proc/x"])
    assert bad.returncode == 1 and bad.stderr == (
        f"det: error: cannot write checkpoint {uuid} to /proc/x/{uuid}: No such file or "
        "directory\n"), bad.stderr
    assert os.path.exists(os.path.join(path, "metadata.json"))

    # Out of range: refused while parsing (a usage error, 2), naming the argument, before
    # any request (was the master's 400 "Invalid request (1 error)", exit status 1).
    for field, value, expected in (("weight", "0", "a number greater than 0"),
                                   ("priority", "100", "a priority from 1 to 99"),
                                   ("max-slots", "0", "a whole number of at least 1")):
        bad = run_det(["-m", master.url, "e", "set", field, exp_id, value])
        assert bad.returncode == 2, bad
        assert (f"error: argument {field.replace('-', '_')}: Expected {expected}. "
                f"Received: '{value}'") in bad.stderr, bad.stderr
    out = det(master, "e", "set", "max-slots", exp_id, "2")
    assert out == f"Experiment {exp_id}: max-slots set to 2\n", out
    (exp,) = json.loads(det(master, "e", "describe", exp_id, "--json"))
    assert exp["max_slots"] == 2, exp
