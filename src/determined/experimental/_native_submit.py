"""Submitting a Native API experiment to a master (SPEC 4.8, 6.3).

:func:`submit_experiment` is what ``det.experimental.create``,
``det.experimental.keras.init`` and ``det.experimental.estimator.init`` do in
cluster mode outside a trial: check the master answers, pack ``context_dir``
(``.detignore`` honoured, at most 96 MB), point the config at the code -- an
``entrypoint`` for an importable trial class, otherwise ``internal.native.command``,
the user's script re-run on the cluster (see ``_native_trial``) -- and
``POST /api/v1/experiments``.
"""

from __future__ import annotations

import copy
import inspect
import os
import sys
import time
from typing import Any, Dict, List, Optional

from determined.common.api import MAX_CONTEXT_BYTES, APIError, MasterClient, pack_context
from determined.config import test_mode_config, validate_config
from determined.errors import InvalidModelDefError, MasterError

__all__ = ["submit_experiment", "trial_entrypoint", "default_command", "resolve_master_url"]

_TERMINAL = ("COMPLETED", "CANCELED", "ERROR")


def resolve_master_url(url: Optional[str] = None) -> str:
    """``url``, else ``$DET_MASTER``, ``$DET_MASTER_ADDR`` or ``localhost:8080``, with a scheme."""
    url = url or os.environ.get("DET_MASTER") or os.environ.get("DET_MASTER_ADDR") or "localhost:8080"
    if "://" not in url:
        url = "http://" + url
    return url.rstrip("/")

def _probe(url: str) -> None:
    with MasterClient(url, timeout=10.0) as client:
        try:
            client.get_master()
        except APIError as e:
            if e.status is None:
                raise MasterError(
                    f"no Determined master is reachable at {url} (GET {url}/api/v1/master "
                    "failed). Start one with `det deploy local up`, pass master_url= or set "
                    "DET_MASTER, or train in this process with mode=Mode.LOCAL (Keras) or "
                    "local=True, test=True"
                ) from None
            raise MasterError(f"the server at {url} does not answer as a Determined master "
                              f"(GET /api/v1/master: {e})") from None


def _context_root(context_dir: str) -> str:
    if not context_dir:
        raise InvalidModelDefError(
            "context_dir is required in cluster mode: the directory holding the model code "
            "(it is uploaded to the master). Received: context_dir=''"
        )
    root = os.path.realpath(context_dir)
    if not os.path.isdir(root):
        raise InvalidModelDefError(
            f"Expected context_dir to be a directory. Received: context_dir={context_dir!r} "
            f"({root} {'is not a directory' if os.path.exists(root) else 'does not exist'})"
        )
    return root


def default_command(context_dir: str) -> List[str]:
    """This script, relative to ``context_dir``, and its arguments (upstream's default)."""
    script = sys.argv[0] if sys.argv else ""
    if not script or script == "-c" or not os.path.isfile(script):
        raise InvalidModelDefError(
            "command is required when not running a Python script (IPython, a notebook, "
            "python -c): pass command=['train.py', ...] naming a script in context_dir. "
            f"Received: sys.argv[0]={script!r}"
        )
    rel = os.path.relpath(os.path.realpath(script), context_dir)
    if rel.startswith(os.pardir + os.sep) or rel == os.pardir:
        raise InvalidModelDefError(
            f"the script {os.path.realpath(script)} is outside context_dir {context_dir}; the "
            "cluster re-runs it from the uploaded context, so move it into context_dir or pass "
            "command=[...] naming a script inside it"
        )
    return [rel.replace(os.sep, "/")] + sys.argv[1:]


def trial_entrypoint(trial_def: type, context_dir: str) -> Optional[str]:
    """``module:Class`` importable from ``context_dir``; None for a class of the running
    script (``__main__``), which the cluster gets by re-running the script.

    Raises:
        InvalidModelDefError: the class cannot be imported from ``context_dir``.
    """
    if not inspect.isclass(trial_def):
        raise InvalidModelDefError(
            f"Expected trial_def to be a trial class. Received: {trial_def!r}"
        )
    module_name, qualname = trial_def.__module__, trial_def.__qualname__
    if module_name == "__main__":
        return None
    where = f"trial class {module_name}.{qualname}"
    if "<locals>" in qualname:
        raise InvalidModelDefError(
            f"{where} is defined inside a function; define it at module level in a file "
            f"of context_dir {context_dir} so that the cluster can import it"
        )
    module = sys.modules.get(module_name)
    source = getattr(module, "__file__", None)
    rel_module = module_name.replace(".", "/")
    expected = [rel_module + ".py", rel_module + "/__init__.py"]
    rel = os.path.relpath(os.path.realpath(source), context_dir).replace(os.sep, "/") if source else ""
    if rel not in expected:
        raise InvalidModelDefError(
            f"{where} is not importable from context_dir {context_dir}: expected its module "
            f"at {context_dir}/{expected[0]}. Received: it is defined in "
            f"{source or 'no file'}. Pass the directory holding {rel_module}.py as context_dir"
        )
    return f"{module_name}:{qualname}"


def _wait(client: MasterClient, exp_id: int, interval: float = 1.0) -> str:
    while True:
        exp = client.get_experiment(exp_id)
        if exp["state"] in _TERMINAL:
            return str(exp["state"])
        time.sleep(interval)


def submit_experiment(
    raw_config: Dict[str, Any],
    context_dir: str,
    command: Optional[List[str]] = None,
    master_url: Optional[str] = None,
    test: bool = False,
    trial_def: Optional[type] = None,
) -> int:
    """Submit a Native experiment and return its id (printed as ``Created experiment N``).

    Args:
        raw_config: the config merged over the Native defaults (not yet validated).
        context_dir: the directory to upload; required.
        command: what the cluster runs (default: this script and its arguments); unused
            when ``trial_def`` is importable from ``context_dir``.
        master_url: the master (default ``$DET_MASTER`` or ``localhost:8080``).
        test: submit a test-mode experiment and wait for it to end.
        trial_def: the trial class of ``det.experimental.create``.

    Raises:
        MasterError: the master is unreachable or refused the experiment (its message
            names the offending config field), or a test experiment failed.
        InvalidModelDefError: bad ``context_dir``, ``command`` or ``trial_def``.
        InvalidConfigError: the config is invalid.
    """
    url = resolve_master_url(master_url)
    _probe(url)
    root = _context_root(context_dir)
    raw = copy.deepcopy(raw_config)
    raw.pop("entrypoint", None)
    entrypoint = trial_entrypoint(trial_def, root) if trial_def is not None else None
    internal = dict(raw.get("internal") or {})
    if entrypoint is not None:
        raw["entrypoint"] = entrypoint
        internal.pop("native", None)
    else:
        internal["native"] = {"command": list(command) if command else default_command(root)}
    if internal:
        raw["internal"] = internal
    else:
        raw.pop("internal", None)
    if test:
        raw = test_mode_config(raw)
    validate_config(raw, source="Native API config")
    packed = pack_context(root)
    if len(packed) > MAX_CONTEXT_BYTES:
        raise InvalidModelDefError(
            f"context_dir {root} is {len(packed) / 1e6:.1f} MB packed; the limit is "
            f"{MAX_CONTEXT_BYTES / 1e6:.0f} MB. Exclude large files (data sets, checkpoints) "
            "with a .detignore file in it"
        )
    with MasterClient(url) as client:
        try:
            exp_id = client.create_experiment(raw, packed)
        except APIError as e:
            raise MasterError(f"the master at {url} refused the experiment: {e}") from None
        print(f"Created experiment {exp_id}", flush=True)
        if test:
            state = _wait(client, exp_id)
            print(f"Experiment {exp_id}: {state}", flush=True)
            if state != "COMPLETED":
                raise MasterError(f"test experiment {exp_id} ended {state}; see its trial logs "
                                  f"(det trial logs, master {url})")
    return exp_id
