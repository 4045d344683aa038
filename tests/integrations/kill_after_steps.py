"""Run a training script and SIGKILL it right after its N-th optimizer step (counted in
this process; torch's global optimizer hook, so the script itself is unchanged).

    python kill_after_steps.py N [--once MARKER] script.py [args...]

With ``--once`` the kill happens only if MARKER does not exist yet (it is created just
before), so a restarted trial running the same command trains on.
"""

import os
import runpy
import signal
import sys

from torch.optim.optimizer import register_optimizer_step_post_hook


def main() -> None:
    limit, rest = int(sys.argv[1]), sys.argv[2:]
    marker = None
    if rest[0] == "--once":
        marker, rest = rest[1], rest[2:]
    script, args = rest[0], rest[1:]
    count = 0

    def after_step(optimizer, *_):
        nonlocal count
        count += 1
        if count >= limit:
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    if marker is None or not os.path.exists(marker):
        if marker is not None:
            open(marker, "w").close()
        register_optimizer_step_post_hook(after_step)
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
