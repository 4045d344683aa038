"""Core API checkpoints (a script trial's ``core.checkpoint``) carry their owner, as a
Trial's do: in ``metadata.json`` and in the name of their unfinished writes; and the
script trial's start removes what earlier processes of it left (its owner's unfinished
writes, its unrecorded later checkpoints), never another owner's or owner-less ones."""

import json
import time
import uuid

import yaml

from determined.common.identity import directory_id
from determined.storage import scratch_tag
from det_cli_testing import run_det

SCRIPT = '''\
import json
import os

import determined as det

hparams = det.get_cluster_info().trial.hparams
with det.core.init() as core:
    with core.checkpoint.store_path({"steps_completed": 5}) as (path, storage_id):
        with open(os.path.join(path, "weights"), "w") as f:
            f.write("w")
        writing = path.name
    with open(hparams["out_file"], "w") as f:
        json.dump({"writing": writing, "storage_id": storage_id}, f)
    core.train.report_validation_metrics(5, {"validation_loss": 1.0})
'''


def _complete(root, when, owner):
    path = root / str(uuid.uuid4())
    path.mkdir()
    (path / "weights").write_bytes(b"x")
    (path / "metadata.json").write_text(json.dumps(
        {"experiment_id": 1, "trial_id": 1, "end_time": when, "batch_number": 30,
         **({"owner": owner} if owner else {})}))
    return path


def test_core_checkpoints_carry_their_owner_and_leftovers_follow_its_rule(tmp_path):
    local = tmp_path / "local"
    root = local / "checkpoints"
    root.mkdir(parents=True)
    owner, stranger = directory_id(str(local)), str(uuid.uuid4())
    later = time.time() + 3600
    partials = {}
    for who in (owner, stranger, ""):
        path = root / f".partial-{scratch_tag(1, 1, who)}{uuid.uuid4()}-0badf00d"
        path.mkdir()
        (path / "weights").write_bytes(b"half")
        partials[path] = who == owner
    completes = {_complete(root, later, who): who == owner for who in (owner, stranger, None)}

    model = tmp_path / "model"
    model.mkdir()
    (model / "train.py").write_text(SCRIPT)
    out_file = tmp_path / "seen.json"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "name": "core-owner", "entrypoint": "python3 train.py", "max_restarts": 0,
        "hyperparameters": {"out_file": str(out_file)},
        "searcher": {"name": "single", "metric": "validation_loss"}}))
    out = run_det(["e", "create", config, model, "--local-dir", local, "--json",
                   "--no-progress"])
    assert out.returncode == 0, out.stderr
    run = json.loads(out.stdout)
    assert run["experiment_id"] == 1 and run["trials"][0]["trial_id"] == 1, run

    seen = json.loads(out_file.read_text())
    writing = seen["writing"]
    assert writing.startswith(".partial-" + scratch_tag(1, 1, owner)), writing
    meta = json.loads((root / seen["storage_id"] / "metadata.json").read_text())
    assert meta["owner"] == owner and meta["trial_id"] == 1
    for path, removed in {**partials, **completes}.items():
        assert path.exists() != removed, path
    logs = run_det(["t", "logs", "1", "--local-dir", local]).stdout
    assert logs.count("removed an unfinished checkpoint write of this trial") == 2, logs
