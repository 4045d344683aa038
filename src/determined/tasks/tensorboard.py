"""A TensorBoard task: TensorBoard over trials' event files in checkpoint storage.

The master writes a spec (``{"runs": [{"name", "storage", "sync_path"}]}``): one run
per trial, named by trial id and hyperparameters. For shared-file-system storage
each run is a symbolic link to the trial's synced directory (new data shows up as
trials sync); other storage is downloaded, and again every ``--refresh`` seconds.

    python -m determined.tasks.tensorboard --port 6006 --path-prefix /proxy/ID \\
        --spec spec.json --logdir DIR

With ``$DET_TASK_TOKEN`` set (tasks always set it) every request must carry
``Authorization: token <it>`` (the master's proxy adds it): on a remote agent the
server listens on the agent's own address, where others could reach it.
"""

from __future__ import annotations

import argparse
import hmac
import json
import logging
import os
import sys
import threading
import time
from typing import Any, Dict, List, Optional

from determined.common.wording import counted

__all__ = ["main", "prepare_logdir"]

logger = logging.getLogger("determined.tasks.tensorboard")


def _safe(name: str) -> str:
    return "".join(c if c not in "/\\\0" else "_" for c in name)[:200]


def prepare_logdir(runs: List[Dict[str, Any]], logdir: str) -> bool:
    """Link or download every run into ``logdir``; True if some run needs re-downloads."""
    os.makedirs(logdir, exist_ok=True)
    downloads = False
    for run in runs:
        storage = run.get("storage") or {}
        target = os.path.join(logdir, _safe(run["name"]))
        if storage.get("type") == "shared_fs":
            root = os.path.normpath(os.path.join(storage["host_path"],
                                                 storage.get("storage_path") or ""))
            source = os.path.join(root, run["sync_path"])
            os.makedirs(source, exist_ok=True)  # a trial that has not synced yet
            if not os.path.islink(target):
                os.symlink(source, target)
            continue
        downloads = True
        try:
            from determined.storage import build_storage

            build_storage(storage).download_dir(run["sync_path"], target)
        except Exception as e:  # shown in the task's logs; the next refresh retries
            logger.warning("cannot fetch event files of %s: %s", run["name"], e)
    return downloads


def _pkg_resources_shim() -> None:
    """TensorBoard 2.15 (the last one TF 2.15 allows) finds plugins with
    ``pkg_resources``, which setuptools >= 81 no longer ships; give it the names it
    uses, over ``importlib.metadata`` and ``packaging``."""
    try:
        import pkg_resources  # noqa: F401
        return
    except ImportError:
        pass
    import importlib.metadata
    import types

    class _EntryPoint:
        def __init__(self, ep: Any):
            self._ep = ep
            self.name = ep.name

        def resolve(self) -> Any:
            return self._ep.load()

        load = resolve

    shim = types.ModuleType("pkg_resources")
    shim.iter_entry_points = lambda group, name=None: [  # type: ignore[attr-defined]
        _EntryPoint(ep) for ep in importlib.metadata.entry_points(group=group)
        if name is None or ep.name == name]
    try:
        from packaging.version import parse

        shim.parse_version = parse  # type: ignore[attr-defined]
    except ImportError:
        pass
    sys.modules["pkg_resources"] = shim


def require_token(app: Any, token: str) -> Any:
    """A WSGI app answering 403 to requests without ``Authorization: token <token>``."""
    expected = token.encode()

    def guarded(environ: Dict[str, Any], start_response: Any) -> Any:
        scheme, _, given = str(environ.get("HTTP_AUTHORIZATION", "")).partition(" ")
        if scheme.lower() == "token" and hmac.compare_digest(given.strip().encode(), expected):
            return app(environ, start_response)
        start_response("403 Forbidden", [("Content-Type", "text/plain")])
        return [b"TensorBoard needs the task's token (open it through the master's proxy)\n"]

    return guarded


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m determined.tasks.tensorboard")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--path-prefix", default="")
    parser.add_argument("--spec", required=True)
    parser.add_argument("--logdir", required=True)
    parser.add_argument("--refresh", type=float, default=30.0)
    args = parser.parse_args(argv)
    from determined.common.log_format import configure_logging

    configure_logging()
    # TensorBoard's own INFO lines are its start-up steps, and with them its data server
    # logs each reload (every few seconds, forever, in a format of its own): warnings only.
    logging.getLogger("tensorboard").setLevel(logging.WARNING)
    with open(args.spec, encoding="utf-8") as f:
        runs = json.load(f)["runs"]
    downloads = prepare_logdir(runs, args.logdir)
    if runs:
        logger.info("TensorBoard over %s: %s", counted(len(runs), "trial"),
                    ", ".join(r["name"] for r in runs))
    else:
        logger.info("TensorBoard over no trials")
    if downloads:
        def refresh() -> None:
            while True:
                time.sleep(args.refresh)
                prepare_logdir(runs, args.logdir)

        threading.Thread(target=refresh, daemon=True).start()
    _pkg_resources_shim()
    from tensorboard import default, program

    token = os.environ.get("DET_TASK_TOKEN")
    server_class = None
    if token:
        class _GuardedServer(program.WerkzeugServer):  # type: ignore[misc]
            def __init__(self, wsgi_app: Any, flags: Any):
                super().__init__(require_token(wsgi_app, token), flags)

        server_class = _GuardedServer
    board = program.TensorBoard(plugins=default.get_plugins(), server_class=server_class)
    flags = ["tensorboard", "--logdir", args.logdir, "--host", args.host,
             "--port", str(args.port), "--reload_interval", "5"]
    if args.path_prefix:
        flags += ["--path_prefix", args.path_prefix]
    board.configure(argv=flags)
    return int(board.main() or 0)


if __name__ == "__main__":
    raise SystemExit(main())
