"""How a ``det`` command ends: run as the program, it leaves the garbage collector
frozen, so the interpreter's exit does not walk every object the command made (0.1-0.6 s)."""

import os
import subprocess
import sys

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src")

CODE = """
import gc, sys
from determined.cli._main import main
before = gc.get_freeze_count()
args = sys.argv[2:]
if args[0] == "--in-process":
    code = main(args[1:])
else:
    sys.argv = ["det", *args]
    code = main()
print(code, before, gc.get_freeze_count())
"""


def run_main(tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC), HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", CODE, "-", *args], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [int(x) for x in out.stdout.split()[-3:]]


def test_a_command_leaves_the_collector_frozen(tmp_path):
    code, before, after = run_main(tmp_path, "experiment", "list", "--local-dir",
                                   str(tmp_path / "local"))
    assert (code, before) == (0, 0)
    assert after > 0


def test_a_failed_command_too(tmp_path):
    code, before, after = run_main(tmp_path, "experiment", "describe", "12345",
                                   "--local-dir", str(tmp_path / "local"))
    assert code == 1 and before == 0
    assert after > 0


def test_a_caller_passing_argv_keeps_its_objects_collectable(tmp_path):
    code, before, after = run_main(tmp_path, "--in-process", "experiment", "list",
                                   "--local-dir", str(tmp_path / "local"))
    assert (code, before, after) == (0, 0, 0)
