"""Scratch directories named after their owning trial process: names, removal by owner,
the sweep of dead owners, and the starters' side (a zygote-forked process and an exec'd
one that are killed leave nothing behind)."""

import os
import signal
import subprocess
import sys
import tempfile
import textwrap

import pytest

from determined._procs import ExitCodes, Spawner, follow_spawned
from determined.common import scratch


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _names(root):
    return sorted(p.name for p in root.iterdir())


def test_names_carry_the_owner_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(scratch.OWNER_ENV, "4242")
    core = scratch.make("core", root=str(tmp_path))
    shard = scratch.make("shard-3", root=str(tmp_path))
    assert os.path.basename(core).startswith("det-core-4242-") and os.path.isdir(core)
    assert os.path.basename(shard).startswith("det-shard-3-4242-")
    assert scratch.owned(4242, root=str(tmp_path)) == sorted([core, shard])

    monkeypatch.delenv(scratch.OWNER_ENV)
    assert scratch.owner() == os.getpid()
    mine = scratch.make("script", root=str(tmp_path))
    assert os.path.basename(mine).startswith(f"det-script-{os.getpid()}-")
    for kind in ("ckpt", "restore", "estimator", "export"):
        assert os.path.basename(scratch.make(kind, root=str(tmp_path))).startswith(
            f"det-{kind}-{os.getpid()}-")
    with pytest.raises(ValueError, match="kind='tb'"):
        scratch.make("tb", root=str(tmp_path))


def test_claim_is_inherited_by_started_processes(tmp_path, monkeypatch):
    monkeypatch.setenv(scratch.OWNER_ENV, "1")
    scratch.claim()
    assert os.environ[scratch.OWNER_ENV] == str(os.getpid())
    out = subprocess.run(
        [sys.executable, "-c",
         f"from determined.common import scratch; print(scratch.make('dist', {str(tmp_path)!r}))"],
        capture_output=True, text=True, check=True)
    assert os.path.basename(out.stdout.strip()).startswith(f"det-dist-{os.getpid()}-")


def test_remove_owned_removes_only_that_owners_directories(tmp_path):
    for name in ("det-core-100-abc_12x", "det-shard-0-100-k2j3h4g5", "det-script-100-q1w2e3r4"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "file").write_text("x")
    keep = ["det-core-1000-abcdefgh", "det-shard-100-12345678", "det-ray-trial-0-abcdefgh",
            "det-ckpt-100-2ca1-abcdefgh", "det-core-100-abc-def", "other-100-abcdefgh"]
    for name in keep:
        (tmp_path / name).mkdir()
    assert scratch.remove_owned(100, root=str(tmp_path)) == 3
    assert _names(tmp_path) == sorted(keep)
    assert scratch.remove_owned(100, root=str(tmp_path)) == 0


def test_sweep_removes_directories_of_dead_owners_only(tmp_path):
    dead = _dead_pid()
    alive = os.getpid()
    (tmp_path / f"det-core-{dead}-abcdefgh").mkdir()
    (tmp_path / f"det-shard-1-{dead}-abcdefgh").mkdir()
    (tmp_path / f"det-core-{alive}-abcdefgh").mkdir()
    (tmp_path / f"det-dist-1-abcdefgh").mkdir()  # pid 1 lives
    (tmp_path / f"det-export-{dead}-abcdefgh").mkdir()
    (tmp_path / f"det-tb-{dead}-abcdefgh").mkdir()  # not a scratch directory
    assert scratch.sweep_dead_owners(root=str(tmp_path)) == 3
    assert _names(tmp_path) == sorted([f"det-core-{alive}-abcdefgh", "det-dist-1-abcdefgh",
                                       f"det-tb-{dead}-abcdefgh"])


_SELF_KILLING = textwrap.dedent("""
    import os, signal, subprocess, sys
    from determined.common import scratch
    scratch.make("core")
    # a process it starts makes one too: owned by this one
    subprocess.run([sys.executable, "-c",
                    "from determined.common import scratch; scratch.make('shard-1')"],
                   check=True)
    print("made", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.fixture
def scratch_root(tmp_path, monkeypatch):
    """The temporary directory of this process and of the processes it starts."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setenv("TMPDIR", str(root))
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def test_zygote_process_killed_leaves_nothing_once_followed(tmp_path, scratch_root):
    (tmp_path / "self_killing.py").write_text(_SELF_KILLING)
    exits = ExitCodes()
    spawner = Spawner(exits.report, preload=[])
    try:
        pid, out_fd = spawner.spawn({"PYTHONPATH": os.pathsep.join(sys.path)}, str(tmp_path),
                                    module="self_killing")
        lines = []
        code = follow_spawned(pid, out_fd, exits, lines.extend, max_age=0.1)
    finally:
        spawner.close()
    assert code == -signal.SIGKILL and "made" in "".join(lines), lines
    assert _names(scratch_root) == []


def test_exec_launcher_makes_the_process_the_owner(tmp_path, scratch_root, monkeypatch):
    """``python -m determined.common.scratch MODULE`` (how a Ray node starts a trial
    process): what the process and its children make is its own."""
    (tmp_path / "self_killing.py").write_text(_SELF_KILLING)
    monkeypatch.setenv(scratch.OWNER_ENV, "1")  # the starter's: not inherited
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-m", "determined.common.scratch", "self_killing"],
                            cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, err
    left = _names(scratch_root)
    assert len(left) == 2 and all(n.split("-")[-2] == str(proc.pid) for n in left), left
    assert scratch.remove_owned(proc.pid) == 2
    assert _names(scratch_root) == []


def test_working_directories_go_with_their_process_or_owner(tmp_path, monkeypatch):
    workdirs = tmp_path / "workdirs"
    workdirs.mkdir()
    monkeypatch.setenv(scratch.WORKDIR_ROOT_ENV, str(workdirs))
    monkeypatch.delenv(scratch.OWNER_ENV, raising=False)
    assert scratch.workdir_path(3, 7) == str(workdirs / f"exp3-trial7-pid{os.getpid()}")
    monkeypatch.setenv(scratch.OWNER_ENV, "100")
    assert scratch.workdir_path(3, 7) == str(workdirs / f"exp3-trial7-pid{os.getpid()}-of100")

    dead, alive = _dead_pid(), os.getpid()
    for name in ("exp1-trial1-pid100", f"exp1-trial1-pid{alive}-of100", "exp1-trial1-pid100.x",
                 f"exp1-trial2-pid{dead}", f"exp1-trial2-pid{dead}-of{alive}",
                 f"exp1-trial2-pid{alive}-of{dead}", f"exp1-trial3-pid{alive}"):
        (workdirs / name).mkdir()
    assert scratch.remove_owned(100, root=str(tmp_path)) == 2
    assert scratch.sweep_dead_owners(root=str(tmp_path)) == 3
    assert _names(workdirs) == sorted(["exp1-trial1-pid100.x", f"exp1-trial3-pid{alive}"])
