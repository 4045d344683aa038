"""Scratch directories named after their owning trial process: names, removal by owner,
the sweep of dead owners, and the starters' side (a zygote-forked process and an exec'd
one that are killed leave nothing behind). A name records the owner's pid, start time and
pid namespace: a sweep tells a reused pid (a live process with another start time) and
leaves another namespace's directories alone; names of the pid alone (an older version's,
or a system's without /proc) go by the pid alone."""

import os
import pathlib
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
    """The directories in ``root`` but the owners' liveness locks."""
    return sorted(p.name for p in root.iterdir() if p.name != scratch.LIVE_DIR)


def _live(root):
    """The names of the liveness lock files in ``root`` (processes that hold or held one)."""
    live = root / scratch.LIVE_DIR
    return sorted(p.name for p in live.iterdir()) if live.is_dir() else []


def _start_and_ns(pid):
    """Process ``pid``'s start time (/proc/<pid>/stat field 22) and pid namespace inode."""
    stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[19]), os.stat(f"/proc/{pid}/ns/pid").st_ino


def _named(pid, start=None, ns=None):
    """How a name records ``pid``: its own start time and namespace unless given."""
    real_start, real_ns = _start_and_ns(pid) if start is None or ns is None else (0, 0)
    return f"{pid}.{real_start if start is None else start:x}.{real_ns if ns is None else ns:x}"


@pytest.fixture
def sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


def test_names_carry_the_owner_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(scratch.OWNER_ENV, "4242")
    monkeypatch.setenv(scratch.OWNER_ID_ENV, "4243.1a.2b")  # another pid's: not used
    core = scratch.make("core", root=str(tmp_path))
    shard = scratch.make("shard-3", root=str(tmp_path))
    assert os.path.basename(core).startswith("det-core-4242-") and os.path.isdir(core)
    assert os.path.basename(shard).startswith("det-shard-3-4242-")
    assert scratch.owned(4242, root=str(tmp_path)) == sorted([core, shard])
    monkeypatch.setenv(scratch.OWNER_ID_ENV, "4242.1a.2b")  # the owner's full name
    assert os.path.basename(scratch.make("dist", root=str(tmp_path))).startswith(
        "det-dist-4242.1a.2b-")
    assert len(scratch.owned(4242, root=str(tmp_path))) == 2  # another namespace's

    monkeypatch.delenv(scratch.OWNER_ENV)
    assert scratch.owner() == os.getpid()
    me = _named(os.getpid())
    mine = scratch.make("script", root=str(tmp_path))
    assert os.path.basename(mine).startswith(f"det-script-{me}-")
    for kind in ("ckpt", "restore", "estimator", "export", "ray-trial-2", "ray-task-ab12-x_y",
                 "test", "test-mode", "test-home"):
        assert os.path.basename(scratch.make(kind, root=str(tmp_path))).startswith(
            f"det-{kind}-{me}-")
    assert len(scratch.owned(os.getpid(), root=str(tmp_path))) == 10
    for kind in ("tb", "ray-task-a b", "ray-trial-x"):
        with pytest.raises(ValueError, match=f"kind={kind!r}"):
            scratch.make(kind, root=str(tmp_path))


def test_claim_is_inherited_by_started_processes(tmp_path, monkeypatch):
    monkeypatch.setenv(scratch.OWNER_ENV, "1")
    monkeypatch.setenv(scratch.OWNER_ID_ENV, "1.2.3")
    scratch.claim()
    assert os.environ[scratch.OWNER_ENV] == str(os.getpid())
    assert os.environ[scratch.OWNER_ID_ENV] == _named(os.getpid())
    out = subprocess.run(
        [sys.executable, "-c",
         f"from determined.common import scratch; print(scratch.make('dist', {str(tmp_path)!r}))"],
        capture_output=True, text=True, check=True)
    assert os.path.basename(out.stdout.strip()).startswith(f"det-dist-{_named(os.getpid())}-")


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
    assert len(left) == 2 and all(n.split("-")[-2].split(".")[0] == str(proc.pid)
                                  and n.split("-")[-2].count(".") == 2 for n in left), left
    assert scratch.remove_owned(proc.pid) == 2
    assert _names(scratch_root) == []


def test_working_directories_go_with_their_process_or_owner(tmp_path, monkeypatch):
    workdirs = tmp_path / "workdirs"
    workdirs.mkdir()
    monkeypatch.setenv(scratch.WORKDIR_ROOT_ENV, str(workdirs))
    monkeypatch.delenv(scratch.OWNER_ENV, raising=False)
    monkeypatch.delenv(scratch.OWNER_ID_ENV, raising=False)
    me = _named(os.getpid())
    assert scratch.workdir_path(3, 7) == str(workdirs / f"exp3-trial7-pid{me}")
    monkeypatch.setenv(scratch.OWNER_ENV, "100")
    assert scratch.workdir_path(3, 7) == str(workdirs / f"exp3-trial7-pid{me}-of100")
    monkeypatch.setenv(scratch.OWNER_ID_ENV, "100.5.6")
    assert scratch.workdir_path(3, 7) == str(workdirs / f"exp3-trial7-pid{me}-of100.5.6")

    dead, alive = _dead_pid(), os.getpid()
    for name in ("exp1-trial1-pid100", f"exp1-trial1-pid{alive}-of100", "exp1-trial1-pid100.x",
                 f"exp1-trial2-pid{dead}", f"exp1-trial2-pid{dead}-of{alive}",
                 f"exp1-trial2-pid{alive}-of{dead}", f"exp1-trial3-pid{alive}"):
        (workdirs / name).mkdir()
    assert scratch.remove_owned(100, root=str(tmp_path)) == 2
    assert scratch.sweep_dead_owners(root=str(tmp_path)) == 3
    assert _names(workdirs) == sorted(["exp1-trial1-pid100.x", f"exp1-trial3-pid{alive}"])


def test_sweep_tells_a_reused_pid_and_leaves_other_namespaces_alone(tmp_path, sleeper):
    """A live pid whose start time differs from the name's is another process (the
    owner's pid, reused): its directories go. A name of another pid namespace stays,
    whether or not its pid means a process here."""
    live, dead = sleeper.pid, _dead_pid()
    start, ns = _start_and_ns(live)
    keep = [f"det-core-{_named(live)}-aaaaaaaa",                      # its owner runs
            f"det-core-{_named(live, start + 1, ns + 1)}-cccccccc",   # another namespace
            f"det-dist-{_named(dead, 1, ns + 1)}-dddddddd",           # there, maybe alive
            f"det-ray-task-ab-12-{_named(live)}-ffffffff",
            f"det-test-{_named(1, 1, ns + 1)}-gggggggg"]
    gone = [f"det-core-{_named(live, start + 1, ns)}-bbbbbbbb",      # pid reused
            f"det-core-{_named(dead, start, ns)}-eeeeeeee",          # no such process
            f"det-ray-trial-0-{_named(live, start - 1, ns)}-hhhhhhhh",
            f"det-test-mode-{_named(dead, 7, ns)}-iiiiiiii"]
    for name in keep + gone:
        (tmp_path / name).mkdir()
    workdirs = tmp_path / "det-workdirs"
    workdirs.mkdir()
    keep_work = [f"exp1-trial1-pid{_named(live)}", f"exp1-trial2-pid{_named(dead, 1, ns + 1)}",
                 f"exp1-trial3-pid{_named(live)}-of{_named(live)}"]
    gone_work = [f"exp1-trial4-pid{_named(live)}-of{_named(live, start + 1, ns)}",
                 f"exp1-trial5-pid{_named(live, start + 1, ns)}-of{_named(live)}",
                 f"exp1-trial6-pid{_named(live)}-of{dead}"]
    for name in keep_work + gone_work:
        (workdirs / name).mkdir()
    assert scratch.sweep_dead_owners(root=str(tmp_path)) == len(gone) + len(gone_work)
    assert _names(tmp_path) == sorted(keep + ["det-workdirs"])
    assert _names(workdirs) == sorted(keep_work)


def test_remove_owned_leaves_a_later_process_and_other_namespaces(tmp_path, sleeper):
    """Once pid P exited, its directories go: of this namespace, named by P alone, or by
    P and a start time other than the one of the process that now has P (if any)."""
    live, dead = sleeper.pid, _dead_pid()
    start, ns = _start_and_ns(live)
    keep = [f"det-core-{_named(live)}-aaaaaaaa",           # the process now at that pid
            f"det-core-{_named(live, start + 1, ns + 1)}-bbbbbbbb",
            f"det-core-{_named(dead, 1, ns + 1)}-cccccccc"]
    gone_live = [f"det-core-{_named(live, start + 1, ns)}-dddddddd", f"det-core-{live}-eeeeeeee"]
    gone_dead = [f"det-core-{_named(dead, 1, ns)}-ffffffff", f"det-core-{dead}-gggggggg"]
    for name in keep + gone_live + gone_dead:
        (tmp_path / name).mkdir()
    assert scratch.owned(dead, root=str(tmp_path)) == sorted(str(tmp_path / n) for n in gone_dead)
    assert scratch.remove_owned(live, root=str(tmp_path)) == 2
    assert scratch.remove_owned(dead, root=str(tmp_path)) == 2
    assert _names(tmp_path) == sorted(keep)


_CLAIMING = textwrap.dedent("""
    import subprocess, sys, time
    from determined.common import scratch
    scratch.claim()
    scratch.make("core")
    subprocess.run([sys.executable, "-c",
                    "from determined.common import scratch; scratch.make('shard-1')"],
                   check=True)
    print("made", flush=True)
    time.sleep(120)
""")


def test_a_live_owners_directories_survive_sweeps_until_it_is_killed(scratch_root):
    """Real names, made by a claiming process and by its child: a sweep keeps them while
    it runs (its start time matches) and removes them once it was killed."""
    proc = subprocess.Popen([sys.executable, "-c", _CLAIMING], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "made"
        named = _named(proc.pid)
        left = _names(scratch_root)
        assert [n.split("-")[1] for n in left] == ["core", "shard"], left
        assert all(n.split("-")[-2] == named for n in left), (named, left)
        assert scratch.sweep_dead_owners() == 0 and _names(scratch_root) == left
        assert _live(scratch_root) == [named]  # the owner's lock; its child owns none
    finally:
        proc.kill()
        proc.wait()
    assert scratch.sweep_dead_owners() == 2 and _names(scratch_root) == []
    assert _live(scratch_root) == []


_OWN = textwrap.dedent("""
    import os, signal
    from determined.common import scratch
    scratch.make("ray-trial-0", own=True)    # an actor's: its own
    scratch.make("ray-task-ab12", own=True)
    scratch.make("test")                     # DET_SCRATCH_OWNER's
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_own_directories_of_a_killed_process_go_with_it(scratch_root, monkeypatch):
    """``make(own=True)`` (a Ray actor's directories) names the process itself, whatever
    owner it inherited: once it is killed a sweep removes them; what it made for its
    owner (alive) stays."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(sys.path))
    for name in (scratch.OWNER_ENV, scratch.OWNER_ID_ENV):
        monkeypatch.setenv(name, "")
    scratch.claim()  # the inherited owner: this process
    proc = subprocess.run([sys.executable, "-c", _OWN])
    assert proc.returncode == -signal.SIGKILL
    left = _names(scratch_root)
    assert sorted(n.rsplit("-", 2)[0] for n in left) == \
        ["det-ray-task-ab12", "det-ray-trial-0", "det-test"], left
    assert scratch.sweep_dead_owners() == 2
    (mine,) = _names(scratch_root)
    assert mine.startswith(f"det-test-{_named(os.getpid())}-")
    assert scratch.remove_owned(os.getpid()) == 0  # alive, with that very start time


_IN_ANOTHER_NAMESPACE = textwrap.dedent("""
    import os, time
    from determined.common import scratch
    scratch.claim()
    scratch.make("core")
    os.makedirs(scratch.workdir_path(1, 1))
    print(os.getpid(), flush=True)
    time.sleep(120)
""")


def test_another_pid_namespaces_directories_go_once_their_owner_ended(scratch_root):
    """A trial process in a pid namespace of its own (as in a container sharing the
    temporary directory; ``unshare`` with a /proc of its own): its pids mean nothing here,
    so a sweep from here keeps its directories while its liveness lock is held and
    removes them, and the lock file, once it was killed."""
    import psutil

    proc = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c",
                             _IN_ANOTHER_NAMESPACE], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert proc.stdout.readline().strip() == "1"  # the first process of its namespace
        made = [n for n in _names(scratch_root) if n != "det-workdirs"]
        assert len(made) == 1, made
        made = made[0]
        owner = made.split("-")[-2]
        assert owner.startswith("1.") and int(owner.split(".")[2], 16) != _start_and_ns(
            os.getpid())[1], owner
        assert _names(scratch_root / "det-workdirs") == [f"exp1-trial1-pid{owner}"]
        assert _live(scratch_root) == [owner]
        assert scratch.sweep_dead_owners() == 0
        assert _names(scratch_root) == [made, "det-workdirs"] and _live(scratch_root) == [owner]
    finally:
        for child in psutil.Process(proc.pid).children(recursive=True):
            child.kill()
        proc.wait(timeout=30)
    assert scratch.sweep_dead_owners() == 2
    assert _names(scratch_root) == ["det-workdirs"] and _names(scratch_root / "det-workdirs") == []
    assert _live(scratch_root) == []
