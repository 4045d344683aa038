"""The data-parallel path on a GPU. One GPU cannot hold two NCCL ranks, so this runs
the NCCL path with world size 1: an NCCL process group, ``context.wrap_model`` giving
DistributedDataParallel, pinned batches copied without blocking, and training that
matches a plain loop bit for bit. Its CPU variant runs the same script on gloo in CI.
(Two ranks on gloo: tests/pytorch/test_pytorch_distributed.py::
test_ddp_path_trains_like_one_process.)"""

import json
import pathlib
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from master_testing import free_port  # noqa: E402

pytestmark = pytest.mark.timeout(300)

HERE = pathlib.Path(__file__).resolve().parent


@pytest.mark.parametrize("device, backend", [
    pytest.param("cpu", "gloo", marks=pytest.mark.cpu_twin),
    pytest.param("cuda", "nccl", marks=pytest.mark.gpu),
])
def test_ddp_with_world_size_one_trains_like_a_plain_loop(tiny_dir, device, backend):
    out = subprocess.run([sys.executable, str(HERE / "ddp_script.py"), str(tiny_dir),
                          str(free_port()), *(["cpu"] if device == "cpu" else [])],
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"backend": backend, "wrapped": "DistributedDataParallel", "pinned": True,
                      "bit_identical": True, "close": True}, result
