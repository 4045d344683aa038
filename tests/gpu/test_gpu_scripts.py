"""A script trial (the user's own PyTorch loop with the Core API) on its GPU: the
launcher starts it with NCCL and DistributedDataParallel on the trial's GPU, a SIGKILL
between checkpoints restarts it from the last one, and it ends with the same weights as
a copy never stopped (CUDA random stream included).

Machines without an NVIDIA GPU run the CPU variant (``cpu_twin``): gloo on a CPU slot."""

import json
import pathlib
import shutil
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from determined._procs._gpus import detect_gpus  # noqa: E402
from master_testing import MasterProcess, create_experiment, wait_for_state  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
HERE = pathlib.Path(__file__).resolve().parent


@pytest.mark.parametrize("device, backend", [
    pytest.param("cpu", "gloo", marks=pytest.mark.cpu_twin),
    pytest.param("cuda:0", "nccl", marks=pytest.mark.gpu),
])
def test_script_trial_killed_on_its_device_resumes_exactly(device, backend, tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    shutil.copy(HERE / "gpu_script.py", model / "gpu_script.py")
    out = tmp_path / "out"
    out.mkdir()
    config = {
        "name": "gpu-script",
        "entrypoint": "python3 -m determined.launch.torch_distributed python3 gpu_script.py",
        # Two copies of one trial, one after the other; the first is killed at step 13.
        "hyperparameters": {"copy": {"type": "categorical", "vals": [1, 2]},
                            "out_dir": str(out), "crash_trial": 1, "crash_at": 13},
        "searcher": {"name": "grid", "metric": "validation_loss",
                     "max_length": {"batches": 20}},
        "resources": {"slots_per_trial": 1},
        "max_restarts": 1,
    }
    data = tmp_path / "master"
    data.mkdir()
    master = MasterProcess(str(data), slots=len(detect_gpus()) or 1).start(timeout=120)
    try:
        with master.client() as api:
            exp_id = create_experiment(api, config, str(model))
            exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=500)
            assert exp["state"] == "COMPLETED", (exp, master.log())
            trials = {t["id"]: t for t in exp["trials"]}
            assert sorted((i, t["restarts"]) for i, t in trials.items()) == [(1, 1), (2, 0)]
    finally:
        master.stop()
    killed, whole = (json.loads((out / f"{i}.json").read_text()) for i in (1, 2))
    assert killed["resumed_at"] == 10 and whole["resumed_at"] is None, (killed, whole)
    for result in (killed, whole):
        assert (result["device"], result["backend"], result["wrapped"]) == (
            device, backend, "DistributedDataParallel"), result
    assert killed["weights"] == whole["weights"]
