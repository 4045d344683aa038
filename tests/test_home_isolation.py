"""The suite runs with a temporary home: nothing it starts writes under the real one."""

import os
import pwd
import subprocess
import sys
import tempfile


def _real_home() -> str:
    return pwd.getpwuid(os.getuid()).pw_dir


def test_the_suite_and_its_children_see_a_temporary_home():
    child = subprocess.run(
        [sys.executable, "-c",
         "import os; print(os.path.expanduser('~')); print(os.environ['XDG_CONFIG_HOME'])"],
        capture_output=True, text=True, check=True).stdout.split()
    for path in [os.path.expanduser("~"), *child]:
        assert not path.startswith(_real_home() + os.sep) and path != _real_home(), path
        assert path.startswith(tempfile.gettempdir()), path
