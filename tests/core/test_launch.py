"""The launchers ``determined.launch.wrap_rank`` and ``determined.launch.torch_distributed``
as real processes."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from determined.core import read_records
from tests.core.core_testing import ROOT, script_env

pytestmark = pytest.mark.timeout(300)

DIST_SCRIPT = ROOT / "tests" / "fixtures" / "core_api" / "dist_train.py"


def _run(args, env, timeout=180, cwd=None):
    return subprocess.run([sys.executable, "-m", *args], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)


def test_wrap_rank_tags_every_line_and_keeps_the_exit_code(tmp_path):
    code = ("import sys; print('out one'); print('out two', flush=True); "
            "sys.stderr.write('bar 10%\\rbar 100%\\nerr'); sys.exit(5)")
    done = _run(["determined.launch.wrap_rank", "3", "--", "python3", "-c", code],
                script_env(tmp_path))
    assert done.returncode == 5
    assert done.stdout == "[rank=3] out one\n[rank=3] out two\n"
    assert done.stderr == "[rank=3] bar 10%\n[rank=3] bar 100%\n[rank=3] err\n"


_LAUNCHER = """
import subprocess, sys, time
# As torchrun starts a rank: wrap_rank in a session of its own.
subprocess.Popen([sys.executable, "-m", "determined.launch.wrap_rank", "0", "python3", "-c",
                  "import os, time; open(sys.argv[1], 'w').write(str(os.getpid())); "
                  "time.sleep(600)".replace("sys.argv[1]", repr(sys.argv[1]))],
                 start_new_session=True)
time.sleep(600)
"""


def test_wrap_rank_and_its_command_die_with_a_launcher_killed_hard(tmp_path):
    pid_file = tmp_path / "rank.pid"
    launcher = subprocess.Popen([sys.executable, "-c", _LAUNCHER, str(pid_file)],
                                env=script_env(tmp_path))
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()):
            assert time.monotonic() < deadline, "the rank did not start"
            time.sleep(0.05)
        rank = int(pid_file.read_text())
    finally:
        launcher.kill()
        launcher.wait()
    deadline = time.monotonic() + 30
    try:
        while _running(rank):
            assert time.monotonic() < deadline, "the rank outlived its launcher"
            time.sleep(0.1)
    finally:
        if _running(rank):  # the failing case: no orphan left behind
            os.kill(rank, signal.SIGKILL)


def _running(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_wrap_rank_reads_the_rank_from_the_environment(tmp_path):
    env = script_env(tmp_path, {"LOCAL_RANK": "2"})
    env.pop("RANK", None)
    done = _run(["determined.launch.wrap_rank", "RANK,LOCAL_RANK", "echo", "hi"], env)
    assert (done.returncode, done.stdout) == (0, "[rank=2] hi\n")
    env.pop("LOCAL_RANK")
    done = _run(["determined.launch.wrap_rank", "RANK,LOCAL_RANK", "echo", "hi"], env)
    assert done.returncode == 2 and "none of them is set" in done.stderr


def test_wrap_rank_reports_a_killed_command_as_a_shell_does(tmp_path):
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    done = _run(["determined.launch.wrap_rank", "0", "python3", "-c", code],
                script_env(tmp_path))
    assert done.returncode == 128 + signal.SIGKILL


def test_torch_distributed_starts_ranks_that_find_each_other(tmp_path):
    out = tmp_path / "core"
    done = _run(["determined.launch.torch_distributed", "--nproc_per_node", "2", "--",
                 "python3", str(DIST_SCRIPT)], script_env(out), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "[rank=0] rank 0/2 local 0/2 trial None sum 3.0" in lines
    assert "[rank=1] rank 1/2 local 1/2 trial None sum 3.0" in lines
    assert "[rank=1] names ['rank-0', 'rank-1'] preempt False" in lines
    # Only the chief reported.
    assert [(r["steps_completed"], r["metrics"]) for r in read_records(str(out))] == [
        (1, {"sum": 3.0, "rank": 0})]


@pytest.mark.parametrize("fail_by", ["raise", "exit"])
def test_torch_distributed_fails_when_a_rank_fails(tmp_path, fail_by):
    """Rank 1 fails while rank 0 goes on into a collective of the Core API that waits for
    it. A rank that raised leaves at once; one that called ``sys.exit(7)`` looks like a
    clean end to the exit hook, which waits ``DET_EXIT_WAIT_SECONDS`` for its peers and
    then leaves: no deadlock either way."""
    env = script_env(tmp_path / "core", {"FAIL_RANK": "1", "FAIL_BY": fail_by,
                                         "DET_EXIT_WAIT_SECONDS": "5"})
    done = _run(["determined.launch.torch_distributed", "--nproc_per_node", "2", "--",
                 "python3", str(DIST_SCRIPT)], env, cwd=tmp_path)
    assert done.returncode != 0
    assert ("RuntimeError: this rank fails" in done.stderr) == (fail_by == "raise")


def test_torch_distributed_ranks_leave_a_group_they_kept_together(tmp_path):
    """Scripts that never destroy torch's process group (Hugging Face's Trainer): the exit
    hook has a rank that ended first wait for the late one before the group goes (a rank
    whose peer closed its connections first may abort in gloo's threads)."""
    env = script_env(tmp_path / "core", {"KEEP_GROUP": "1", "LATE_RANK": "1"})
    done = _run(["determined.launch.torch_distributed", "--nproc_per_node", "2", "--",
                 "python3", str(DIST_SCRIPT)], env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    late = float(next(ln for ln in lines if ln.startswith("[rank=1] late rank done at "))
                 .rsplit(" ", 1)[1])
    exited = float(next(ln for ln in lines if ln.startswith("[rank=0] exited at "))
                   .rsplit(" ", 1)[1])
    assert exited >= late, lines
    assert "without waiting" not in done.stderr, done.stderr


def test_torch_distributed_starts_one_rank_per_slot_of_the_trial(tmp_path):
    """Under the platform the trial's slots on this machine decide nproc."""
    info = tmp_path / "cluster-info.json"
    config = {"entrypoint": "python3 -m determined.launch.torch_distributed python3 x.py",
              "resources": {"slots_per_trial": 2}, "searcher": {"name": "single"}}
    info.write_text(json.dumps({
        "env": {"experiment_config": config, "hparams": {}, "model_dir": str(tmp_path),
                "experiment_id": 4, "trial_id": 9},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(tmp_path / "ckpt")},
        "master_url": None}))
    env = script_env(tmp_path / "core", {"DET_CLUSTER_INFO": str(info)})
    done = _run(["determined.launch.torch_distributed", "python3", str(DIST_SCRIPT)], env,
                cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "[rank=0] rank 0/2 local 0/2 trial 9 sum 3.0" in lines
    assert "[rank=1] rank 1/2 local 1/2 trial 9 sum 3.0" in lines


def test_torch_distributed_usage_errors(tmp_path):
    done = _run(["determined.launch.torch_distributed"], script_env(tmp_path))
    assert done.returncode == 2 and "expected a command" in done.stderr
    done = _run(["determined.launch.torch_distributed", "--trial", "m:T", "python3", "x.py"],
                script_env(tmp_path))
    assert done.returncode == 2 and "--trial takes no command" in done.stderr
