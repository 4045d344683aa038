"""The zygote spawner: real forked processes, their output, exit codes and kills."""

import os
import queue
import signal
import time

import pytest

from determined._procs import Spawner


@pytest.fixture
def spawner():
    exits: "queue.Queue" = queue.Queue()
    s = Spawner(lambda pid, code: exits.put((pid, code)), preload=[])
    s.exits = exits
    yield s
    s.close()


def read_all(fd: int) -> str:
    with os.fdopen(fd, "rb") as f:
        return f.read().decode()


def script(tmp_path, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(body)
    return name


def test_output_exit_code_env_and_session(spawner, tmp_path):
    mod = script(tmp_path, "hello", (
        "import os, sys\n"
        "print('hello', os.environ['GREETING'], sys.argv[1:], os.getcwd())\n"
        "print('to stderr', file=sys.stderr)\n"
        "print('sid', os.getsid(0) == os.getpid())\n"
        "sys.exit(3)\n"))
    pid, fd = spawner.spawn({"GREETING": "world"}, str(tmp_path), module=mod, args=["a", "b"])
    out = read_all(fd)
    assert f"hello world ['a', 'b'] {tmp_path}" in out
    assert "to stderr" in out and "sid True" in out
    assert spawner.exits.get(timeout=60) == (pid, 3)


def test_raising_module_exits_1_with_traceback(spawner, tmp_path):
    mod = script(tmp_path, "boom", "raise ValueError('no good')\n")
    pid, fd = spawner.spawn({}, str(tmp_path), module=mod)
    out = read_all(fd)
    assert "ValueError: no good" in out and "Traceback" in out
    assert spawner.exits.get(timeout=60) == (pid, 1)


def test_trial_runner_without_a_spec_fails_clearly(spawner, tmp_path):
    pid, fd = spawner.spawn({}, str(tmp_path))
    assert "DET_TRIAL_SPEC" in read_all(fd)
    assert spawner.exits.get(timeout=60) == (pid, 1)


def test_killpg_reports_the_signal_and_children_die_too(spawner, tmp_path):
    mod = script(tmp_path, "sleeper", (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"))
    pid, fd = spawner.spawn({}, str(tmp_path), module=mod)
    with os.fdopen(fd, "rb") as out:
        grandchild = int(out.readline())
        assert os.getpgid(grandchild) == pid
        os.killpg(pid, signal.SIGKILL)
        out.read()
    assert spawner.exits.get(timeout=60) == (pid, -signal.SIGKILL)
    assert _gone(grandchild)


def test_close_kills_running_processes(tmp_path):
    exits: "queue.Queue" = queue.Queue()
    s = Spawner(lambda pid, code: exits.put((pid, code)), preload=[])
    mod = script(tmp_path, "forever", "import time\ntime.sleep(60)\n")
    pid, fd = s.spawn({}, str(tmp_path), module=mod)
    os.close(fd)
    s.close()
    assert _gone(pid)


def test_a_dead_zygote_is_replaced_and_its_children_reported(spawner, tmp_path):
    mod = script(tmp_path, "forever2", "import time\ntime.sleep(60)\n")
    pid, fd = spawner.spawn({}, str(tmp_path), module=mod)
    os.close(fd)
    zygote = spawner._proc.pid
    os.kill(zygote, signal.SIGKILL)
    assert spawner.exits.get(timeout=60) == (pid, -9)
    assert _gone(pid)
    quick = script(tmp_path, "quick", "print('again')\n")
    pid2, fd2 = spawner.spawn({}, str(tmp_path), module=quick)
    assert "again" in read_all(fd2)
    assert spawner.exits.get(timeout=60) == (pid2, 0)
    assert spawner._proc.pid != zygote


def _children(pid: int) -> set:
    out = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out.update(int(c) for c in f.read().split())
        except FileNotFoundError:  # a thread that ended since the listing
            pass
    return out


def _spares(spawner, count: int, timeout: float = 60.0) -> set:
    """The zygote's idle children once there are ``count`` (it forks them ahead)."""
    spawner.start()
    zygote = spawner._proc.pid
    deadline = time.monotonic() + timeout
    while len(_children(zygote)) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return _children(zygote)


def test_spawns_run_in_children_forked_ahead_and_replaced(spawner, tmp_path):
    from determined._procs._zygote import SPARES

    spares = _spares(spawner, SPARES)
    assert len(spares) == SPARES
    mod = script(tmp_path, "ahead", "import os, sys\nprint(os.environ['X'], sys.argv[1:])\n")
    pid, fd = spawner.spawn({"X": "ready"}, str(tmp_path), module=mod, args=["a"])
    assert pid in spares  # no fork on the request's path
    assert read_all(fd) == "ready ['a']\n"
    assert spawner.exits.get(timeout=60) == (pid, 0)
    assert len(_spares(spawner, SPARES) - {pid}) == SPARES  # replaced


def test_spares_exit_with_the_zygote(tmp_path):
    from determined._procs._zygote import SPARES

    s = Spawner(lambda pid, code: None, preload=[])
    spares = _spares(s, SPARES)
    zygote = s._proc.pid
    s.close()
    assert not _alive(zygote) and all(_gone(pid) for pid in spares)

    s = Spawner(lambda pid, code: None, preload=[])  # a zygote killed, not closed
    spares = _spares(s, SPARES)
    os.kill(s._proc.pid, signal.SIGKILL)
    try:
        assert all(_gone(pid) for pid in spares)
    finally:
        s.close()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _runner_imports() -> "list[str]":
    """The determined modules ``_rest_host.main`` imports itself (in its body)."""
    import ast
    import inspect

    from determined.harness import _rest_host

    tree = ast.parse(inspect.getsource(_rest_host.main).lstrip())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return sorted(n for n in names if n.startswith("determined"))


def test_children_start_with_the_trial_runners_imports_done(spawner, tmp_path):
    """Every trial runs ``_rest_host.main``: what it imports is imported once, in the
    zygote, not again in every trial process."""
    wanted = _runner_imports()
    assert "determined.harness._script_trial" in wanted  # the walk finds main's imports
    mod = script(tmp_path, "modules", (
        "import sys\n"
        f"print('missing', [m for m in {wanted!r} if m not in sys.modules])\n"))
    pid, fd = spawner.spawn({}, str(tmp_path), module=mod)
    assert "missing []" in read_all(fd)
    assert spawner.exits.get(timeout=60) == (pid, 0)


def _zygotes() -> "set[int]":
    """Pids of this process's live zygote children."""
    found = set()
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except (OSError, ValueError):
            continue
        if stat[0] != "Z" and int(stat[1]) == os.getpid() and b"_procs._zygote" in cmdline:
            found.add(int(pid))
    return found


def _new_zygotes(before: "set[int]") -> "set[int]":
    """Zygote children not in ``before``, once there is one (a just-started one may not
    have exec'd yet)."""
    deadline = time.monotonic() + 30
    while not _zygotes() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    return _zygotes() - before


def test_a_prestarted_zygote_is_adopted_by_the_first_spawner(tmp_path):
    from determined._procs._spawner import discard_prestarted_zygote, prestart_zygote

    before = _zygotes()
    prestart_zygote(preload=[])
    early = _new_zygotes(before)
    assert len(early) == 1
    s = Spawner(lambda pid, code: None, preload=[])
    try:
        s.start()
        assert _zygotes() - before == early  # no second zygote
        mod = script(tmp_path, "hi", "print('hi from the early zygote')\n")
        pid, fd = s.spawn({}, str(tmp_path), module=mod)
        assert "hi from the early zygote" in read_all(fd)
    finally:
        s.close()
        discard_prestarted_zygote()
    assert not _zygotes() - before


def test_a_prestarted_zygote_with_other_preloads_is_stopped_not_used(tmp_path):
    from determined._procs._spawner import prestart_zygote

    before = _zygotes()
    prestart_zygote(preload=["json"])
    early = _new_zygotes(before)
    assert len(early) == 1
    s = Spawner(lambda pid, code: None, preload=[])
    try:
        s.start()
        now = _zygotes() - before
        assert len(now) == 1 and not now & early  # the early one is gone (reaped)
    finally:
        s.close()
    assert not _zygotes() - before


def test_an_unadopted_prestarted_zygote_is_discarded():
    from determined._procs._spawner import discard_prestarted_zygote, prestart_zygote

    before = _zygotes()
    prestart_zygote(preload=[])
    assert len(_new_zygotes(before)) == 1
    discard_prestarted_zygote()
    assert not _zygotes() - before
    discard_prestarted_zygote()  # nothing left: a no-op
