"""A trial process killed with SIGKILL mid-training leaves no scratch directory behind:
``det experiment create --local`` runs a Core API script trial whose script, inside a
sharded checkpoint write, SIGKILLs the trial process (its parent). The trial process's
``det-script-`` directory and the script's ``det-shard-0-`` directory were there at that
moment, and its working directory; once the run ended (its driver noticed the exit)
none is."""

import json
import os
import pathlib
import shutil
import tempfile
import textwrap

import pytest
import yaml

from det_cli_testing import run_det
from determined.common import scratch

pytestmark = pytest.mark.timeout(120)

_SCRIPT = textwrap.dedent("""
    import json, os, signal, time
    import determined as det

    marker = det.get_cluster_info().trial.hparams["marker"]
    with det.core.init() as core:
        for op in core.searcher.operations():
            for step in range(1, 4):
                core.train.report_training_metrics(step, {"loss": 1.0 / step})
            with core.checkpoint.store_path({"steps_completed": 3}, shard=True) as (path, _):
                (path / "weights").write_text("half written")
                seen = {"owner": int(os.environ["DET_SCRATCH_OWNER"]), "parent": os.getppid(),
                        "dirs": sorted(os.listdir(os.environ["TMPDIR"])),
                        "workdirs": os.listdir(os.path.join(os.environ["TMPDIR"], "det-workdirs"))}
                with open(marker + ".part", "w") as f:
                    json.dump(seen, f)
                os.rename(marker + ".part", marker)
                os.kill(seen["owner"], signal.SIGKILL)  # the trial process (never det)
                time.sleep(60)  # the trial process's guard kills this one too
""")


def test_sigkilled_trial_process_leaves_no_scratch_directory(tmp_path, request):
    model = tmp_path / "model"
    model.mkdir()
    (model / "train.py").write_text(_SCRIPT)
    marker = tmp_path / "seen.json"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "name": "scratch-after-kill", "entrypoint": "python3 train.py",
        "hyperparameters": {"marker": str(marker)},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 3}},
        "max_restarts": 0,
    }))
    # This test's own temporary directory (no one else's scratch), short: a trial's
    # sockets live in it and AF_UNIX paths are at most 107 bytes (xdist's tmp_path is long).
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="dsk", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(tmp, ignore_errors=True))
    out = run_det(["e", "create", config, model, "--local", "--local-dir", tmp_path / "local",
                   "--json", "--no-progress"], env={"TMPDIR": str(tmp)}, timeout=100)
    assert out.stdout.strip(), out.stderr  # the run's record, as JSON
    result = json.loads(out.stdout)
    assert result["state"] == "ERROR", out.stdout + out.stderr

    seen = json.loads(marker.read_text())
    owner = seen["owner"]
    assert owner == seen["parent"]  # the trial process owns what its script makes
    # det-<kind>-<pid>.<start>.<pid namespace>-<random>: the trial process's full name
    kinds = sorted(name.split("-")[1] for name in seen["dirs"]
                   if name.startswith("det-") and f"-{owner}." in name)
    assert kinds == ["script", "shard"], seen["dirs"]
    assert any(n.startswith(f"exp1-trial1-pid{owner}.") for n in seen["workdirs"])
    assert scratch.owned(owner, root=str(tmp)) == [], os.listdir(tmp)
    assert sorted(n for n in os.listdir(tmp) if n.startswith("det-")) == ["det-live",
                                                                          "det-workdirs"]
    assert os.listdir(tmp / "det-live") == []  # nor the liveness lock of a process that ended
    assert os.listdir(tmp / "det-workdirs") == []  # the trial process's working directory
