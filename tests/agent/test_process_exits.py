"""A process's exit is seen when it exits, not when its output pipe closes: a child it
leaves behind (a data loader's worker, a background command) may hold the pipe open.
Real processes: the zygote spawner as the agent and the embedded agent use it, and a
task process as every task launcher does."""

import os
import sys
import threading
import time

import pytest

from determined._procs import ExitCodes, Spawner, follow_spawned
from determined.tasks._launch import TaskProcess

pytestmark = pytest.mark.timeout(300)

#: Well under the grandchild's sleep: an exit seen only at the pipe's end fails this.
SEEN_WITHIN = 60.0

LEAVES_A_CHILD = (
    "import subprocess, sys\n"
    "child = subprocess.Popen(['sleep', '300'])  # inherits stdout and stderr\n"
    "print('child', child.pid)\n"
    "for i in range(3000):\n"
    "    print('line', i)\n"
    "print('last words', file=sys.stderr)\n"
    "sys.exit(3)\n")


def _in_thread(fn):
    """Run ``fn`` in a thread; (returned within SEEN_WITHIN, its result)."""
    result = []
    thread = threading.Thread(target=lambda: result.append(fn()), daemon=True)
    thread.start()
    thread.join(SEEN_WITHIN)
    return (not thread.is_alive(), result[0] if result else None)


def _gone(pid: int) -> bool:
    """Whether ``pid`` ended (exited, or a zombie waiting for init to reap it)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _wait_gone(pid: int, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while not _gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _child_pid(lines):
    return int(next(line for line in lines if line.startswith("child ")).split()[1])


def test_a_spawned_process_that_leaves_a_child_holding_its_output_is_seen_exited(tmp_path):
    (tmp_path / "leaves_child.py").write_text(LEAVES_A_CHILD)
    exits = ExitCodes()
    spawner = Spawner(exits.report, preload=[])
    lines = []
    try:
        pid, fd = spawner.spawn({}, str(tmp_path), module="leaves_child")
        returned, code = _in_thread(lambda: follow_spawned(pid, fd, exits, lines.extend, 0.1))
        child = _child_pid(lines) if lines else None
        try:
            assert returned, "the exit waited for the pipe's end (the child's)"
            assert code == 3
            # Everything the process wrote is read, its last words included.
            assert [ln for ln in lines if ln.startswith("line ")] == \
                [f"line {i}" for i in range(3000)]
            assert "last words" in lines
            assert _wait_gone(child), "the child it left behind still runs"
        finally:
            if child is not None and not _gone(child):
                os.kill(child, 9)
    finally:
        spawner.close()


def test_an_ordinary_exit_loses_no_output_and_keeps_its_code(tmp_path):
    (tmp_path / "plain.py").write_text(
        "import sys\nfor i in range(20000):\n    print('x' * 50, i)\nsys.exit(0)\n")
    exits = ExitCodes()
    spawner = Spawner(exits.report, preload=[])
    lines = []
    try:
        pid, fd = spawner.spawn({}, str(tmp_path), module="plain")
        returned, code = _in_thread(lambda: follow_spawned(pid, fd, exits, lines.extend, 0.1))
        assert returned and code == 0
        assert len(lines) == 20000 and lines[-1].endswith(" 19999")
    finally:
        spawner.close()


def test_a_task_that_leaves_a_child_holding_its_output_is_seen_exited(tmp_path):
    script = tmp_path / "leaves_child.py"
    script.write_text(LEAVES_A_CHILD)
    task = TaskProcess([sys.executable, str(script)], dict(os.environ), str(tmp_path))
    lines = []
    returned, code = _in_thread(lambda: task.pump(lines.extend))
    child = _child_pid(lines) if lines else None
    try:
        assert returned, "the exit waited for the pipe's end (the child's)"
        assert code == 3
        assert "line 2999" in lines and "last words" in lines
        assert _wait_gone(child), "the child it left behind still runs"
    finally:
        if child is not None and not _gone(child):
            os.kill(child, 9)
        task.signal(9)
