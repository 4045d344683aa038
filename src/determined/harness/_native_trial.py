"""The trial side of a Native API experiment on a master (SPEC 4.8).

A Native experiment's config has ``internal.native.command`` and no ``entrypoint``.
The master's trial process (``determined.harness._rest_host``) asks
:func:`native_trial_class` for the trial class: the user's command is re-run from
the top in this process (``runpy``, ``__name__ == "__main__"``); ``init()`` of the
Keras or Estimator Native API sees :func:`current_trial_env` and returns a context
with the trial's hyperparameters; the training call (``model.fit``,
``context.train_and_evaluate``, ``det.experimental.create``) builds a trial class
and hands it over with :func:`hand_over`, which unwinds the script -- code after
the training call never runs -- and the trial runner trains that class under the
master's searcher operations.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from typing import Any, List, NoReturn, Optional, Tuple

from determined.errors import DeterminedError, InvalidTrialError, UserCodeError
from determined.harness._env import TrialEnv

__all__ = ["native_trial_class", "current_trial_env", "hand_over"]

_trial_env: Optional[TrialEnv] = None
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class _HandOver(BaseException):
    """Unwinds the user's script once the training call built the trial class
    (a BaseException, so that a user's ``except Exception`` does not swallow it)."""

    def __init__(self, trial_class: type):
        super().__init__(trial_class.__qualname__)
        self.trial_class = trial_class


def current_trial_env() -> Optional[TrialEnv]:
    """The trial's environment while the master's trial process runs a Native command,
    else None (the caller is a user's script about to submit an experiment)."""
    return _trial_env


def hand_over(trial_class: type) -> NoReturn:
    """Give ``trial_class`` to the trial runner; the rest of the user's script is skipped."""
    raise _HandOver(trial_class)


def native_command(config: Any) -> Optional[List[str]]:
    """``internal.native.command`` of a config without ``entrypoint``, else None."""
    if not isinstance(config, dict) or config.get("entrypoint"):
        return None
    internal = config.get("internal") or {}
    native = internal.get("native") if isinstance(internal, dict) else None
    if not isinstance(native, dict):
        return None
    command = native.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise InvalidTrialError(
            "Expected internal.native.command to be a non-empty list of strings such as "
            f"['train.py', '--flag', 'value']. Received: {command!r}"
        )
    return command


def _target(command: List[str], model_dir: str) -> Tuple[str, str, List[str]]:
    """(kind, what, argv) of ``command``: kind "path" runs a script, "module" ``-m``."""
    args = list(command)
    head = os.path.basename(args[0])
    if head.startswith("python") and not head.endswith(".py"):
        args = args[1:]
    if len(args) >= 2 and args[0] == "-m":
        return "module", args[1], [args[1]] + args[2:]
    if args and args[0].endswith(".py"):
        path = os.path.join(model_dir, args[0])
        if not os.path.isfile(path):
            raise InvalidTrialError(
                f"internal.native.command {command!r}: the script {args[0]!r} is not in the "
                f"context directory (looked for {path})"
            )
        return "path", path, [path] + args[1:]
    raise InvalidTrialError(
        f"Expected internal.native.command to start with a .py script of the context directory "
        f"(optionally after 'python') or '-m module'. Received: {command!r}"
    )


def _script_traceback(exc: BaseException) -> str:
    """The user's frames only: neither runpy's nor this package's."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith("<frozen")
              and os.path.basename(f.filename) != "runpy.py"
              and not os.path.abspath(f.filename).startswith(_PACKAGE_DIR)]
    return "".join(["Traceback (most recent call last):\n", *traceback.format_list(frames),
                    *traceback.format_exception_only(type(exc), exc)])


def native_trial_class(env: TrialEnv) -> Optional[type]:
    """Run the Native command of ``env``'s config until its training call; return the
    trial class it built. None when the config is not a Native experiment's.

    Raises:
        InvalidTrialError: the command is malformed, or it ended (or exited) without
            a training call.
        UserCodeError: the user's script raised before its training call.
    """
    global _trial_env
    command = native_command(env.experiment_config)
    if command is None:
        return None
    kind, what, argv = _target(command, env.model_dir)
    _trial_env = env
    saved_argv = sys.argv
    sys.argv = argv
    if kind == "path" and os.path.dirname(what) not in sys.path:
        sys.path.insert(0, os.path.dirname(what))
    try:
        if kind == "path":
            runpy.run_path(what, run_name="__main__")
        else:
            runpy.run_module(what, run_name="__main__", alter_sys=True)
    except _HandOver as done:
        return done.trial_class
    except SystemExit as e:
        raise InvalidTrialError(
            f"the Native API command {command!r} exited (code {e.code!r}) before its training "
            "call (model.fit, context.train_and_evaluate or det.experimental.create)"
        ) from None
    except DeterminedError:
        raise
    except Exception as e:
        raise UserCodeError(
            f"the Native API command {command!r} raised {type(e).__name__}: {e}",
            _script_traceback(e),
        ) from None
    finally:
        sys.argv = saved_argv
        _trial_env = None  # the script is over: init() and create() submit again
    raise InvalidTrialError(
        f"the Native API command {command!r} finished without a training call: call "
        "model.fit()/fit_generator() on a model wrapped by the context of "
        "det.experimental.keras.init(), context.train_and_evaluate() of "
        "det.experimental.estimator.init(), or det.experimental.create()"
    )
