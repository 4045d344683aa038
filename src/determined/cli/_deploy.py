"""``det deploy local up|down``: a master with an embedded agent, in the background.

The master runs detached (its own session) as ``python -m determined.master``; its
pid, URL and log live in the data directory (default ``$DET_MASTER_DATA_DIR`` or
``~/.determined/master``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any, Dict, Optional

from determined.errors import DeterminedError
from determined.cli._argtypes import count, existing_file, port_number, positive_float

__all__ = ["add_parser"]


def add_parser(nouns: Any) -> None:
    deploy = nouns.add_parser("deploy", help="start or stop a cluster")
    kinds = deploy.add_subparsers(dest="kind", metavar="KIND")
    local = kinds.add_parser("local", help="a master and agent on this machine, no Docker")
    verbs = local.add_subparsers(dest="verb", metavar="ACTION")
    up = verbs.add_parser("up", help="start the master in the background")
    up.add_argument("--slots", type=count, default=None, help="slots (default: one per GPU, else one per CPU)")
    up.add_argument("--port", type=port_number, default=8080, help="the master's port (default: 8080)")
    up.add_argument("--data-dir", default=None,
                    help="database, logs and checkpoints (default: ~/.determined/master)")
    up.add_argument("--master-config", default=None, type=existing_file,
                    help="master config YAML")
    up.add_argument("--timeout", type=positive_float, default=60.0,
                    help="seconds to wait for health")
    up.set_defaults(func=_up)
    down = verbs.add_parser("down", help="stop the master")
    down.add_argument("--data-dir", default=None,
                      help="the one given to `up` (default: ~/.determined/master)")
    down.add_argument("--port", type=port_number, default=None,
                      help="stop it only if it is the master on this port (as given to `up`)")
    down.set_defaults(func=_down)


def _data_dir(args: argparse.Namespace) -> str:
    from determined.master._config import default_data_dir

    return os.path.abspath(os.path.expanduser(args.data_dir or default_data_dir()))


def _state_path(data_dir: str) -> str:
    return os.path.join(data_dir, "master.json")


def _read_state(data_dir: str) -> Optional[Dict[str, Any]]:
    try:
        with open(_state_path(data_dir), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _healthy(url: str) -> bool:
    import httpx

    try:
        return httpx.get(url + "/api/v1/master", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _port_refusal(port: int, url: str) -> Optional[str]:
    """Why a new master cannot use ``port`` (held by another master or program), or None."""
    from determined.master.api._serve import port_taken

    if _healthy(url):
        return (f"port {port} is already used by another Determined master ({url}); use it "
                "(export DET_MASTER=" + url + "), stop it, or choose another --port")
    taken = port_taken("0.0.0.0", port)
    if taken:
        return (f"port {port} is already in use by another program ({taken}); stop it or "
                "choose another --port")
    return None


def _up(args: argparse.Namespace) -> int:
    data_dir = _data_dir(args)
    os.makedirs(data_dir, exist_ok=True)
    state = _read_state(data_dir)
    if state and _alive(state["pid"]) and _healthy(state["url"]):
        print(f"The master is already running at {state['url']} (pid {state['pid']})")
        return 0
    url = f"http://127.0.0.1:{args.port}"
    refusal = _port_refusal(args.port, url)
    if refusal:  # ``det: error: ...``, folded on a terminal as every error
        raise DeterminedError(refusal)
    cmd = [sys.executable, "-m", "determined.master", "--port", str(args.port),
           "--data-dir", data_dir]
    if args.slots is not None:
        cmd += ["--slots", str(args.slots)]
    if args.master_config:
        cmd += ["--config", args.master_config]
    log_path = os.path.join(data_dir, "master.log")
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    with open(_state_path(data_dir), "w", encoding="utf-8") as f:
        json.dump({"pid": proc.pid, "url": url, "log": log_path}, f)
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            with open(log_path, encoding="utf-8", errors="replace") as f:
                tail = f.read()[-2000:]
            print(f"det: error: the master exited with code {proc.returncode}:\n{tail}",
                  file=sys.stderr)
            return 1
        if _healthy(url):
            print(f"Master running at {url} (pid {proc.pid})")  # a line each: fits 80 columns
            print(f"Data in {data_dir}")
            print(f"Log: {log_path}")
            print(f"Use it with: export DET_MASTER={url}")
            return 0
        time.sleep(0.2)
    raise DeterminedError(f"the master did not answer at {url} within {args.timeout:.0f}s; "
                          f"see {log_path}")


def _down(args: argparse.Namespace) -> int:
    data_dir = _data_dir(args)
    state = _read_state(data_dir)
    if not state or not _alive(state["pid"]):
        print("No master is running" + (f" from {data_dir}" if data_dir else ""))
        if state:
            os.remove(_state_path(data_dir))
        return 0
    pid = state["pid"]
    url = str(state.get("url", ""))
    if args.port is not None and not url.endswith(f":{args.port}"):
        raise DeterminedError(f"the master started from {data_dir} runs at {url}, not on port "
                              f"{args.port}; a master started with another --data-dir is "
                              "stopped with `det deploy local down --data-dir DIR`")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and _alive(pid):
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                break
        except ChildProcessError:
            pass
        time.sleep(0.1)
    if _alive(pid):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    os.remove(_state_path(data_dir))
    print(f"Master stopped (pid {pid})")
    return 0
