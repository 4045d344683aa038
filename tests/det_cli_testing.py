"""Run the real ``det`` command line in a subprocess (for tests)."""

import os
import sys


def run_det(args, cwd=None, timeout=300, env=None):
    """Run the real ``det`` console entry point in a subprocess."""
    import subprocess

    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "determined.cli", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full_env,
    )
