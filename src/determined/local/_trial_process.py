"""The trial process of a local experiment, and the host it talks to its driver with.

Protocol: see :mod:`determined.harness._pipe_host` (the trial process's side).
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from typing import Any, Dict

from determined.common import scratch
from determined.harness import TrialEnv
from determined.harness._pipe_host import PipeHost
from determined.harness._rank_logs import configure_trial_logging

__all__ = ["PipeHost", "trial_main"]


def trial_main(conn: Any, env: TrialEnv, storage_config: Dict[str, Any], log_path: str,
               num_threads: int) -> None:
    """Entry point of a trial process (started with the ``spawn`` method)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the driver stops us in order
    scratch.claim()  # the driver removes what it leaves if it is killed
    log = open(log_path, "a", buffering=1, encoding="utf-8")
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log
    configure_trial_logging(log)  # "12:04:31 INFO message", as every trial process
    os.environ.setdefault("OMP_NUM_THREADS", str(num_threads))
    # Per-trial TensorBoard files, beside the trial's log.
    from determined.tensorboard._paths import set_platform_dir

    set_platform_dir(os.path.join(
        os.path.dirname(os.path.dirname(log_path)), "tensorboard", f"trial_{env.trial_id}"))
    from determined.errors import InvalidTrialError, InvalidModelDefError
    from determined.harness import TrialRunner
    from determined.config import is_script_entrypoint
    from determined.harness._ranks import distributed_trial
    from determined.harness._script_trial import run_script
    from determined.harness._trial_setup import user_paths
    from determined.storage import build_storage

    os.chdir(env.model_dir)
    model_dir = env.model_dir  # the user's: tracebacks name its files, not the copy's
    script = is_script_entrypoint(env.experiment_config.get("entrypoint"))
    try:
        try:
            if not script:  # a script is a process of its own
                import torch

                torch.set_num_threads(num_threads)
        except ImportError:
            pass
        # A distributed trial: this process is rank 0 and starts the others.
        with distributed_trial(env, storage_config, num_threads) as env:
            if script:
                code = run_script(env, PipeHost(conn), storage_config)
                conn.send(("exit", "completed" if code == 0 else f"exit code {code}"))
                if code:
                    raise SystemExit(code)
                return
            runner = TrialRunner(env, PipeHost(conn), build_storage(storage_config))
            reason = runner.run()
        conn.send(("exit", reason))
    except (InvalidTrialError, InvalidModelDefError) as e:
        message = user_paths(str(e), model_dir)
        print(message, file=log)
        conn.send(("error", "user", message))
        raise SystemExit(1)
    except Exception as e:
        text = user_paths("".join(traceback.format_exception(type(e), e, e.__traceback__)),
                          model_dir)
        print(text, file=log)
        conn.send(("error", "platform", f"{type(e).__name__}: {user_paths(str(e), model_dir)}"
                                        f"\n{text}"))
        raise SystemExit(1)
    finally:
        log.flush()
