"""Run the master: ``python -m determined.master [--config FILE] [--port P] ...``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import List, Optional

__all__ = ["serve", "main", "port_taken"]


def port_taken(host: str, port: int) -> Optional[str]:
    """Why ``host:port`` cannot be listened on now (the OS's reason), or None if it can."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            s.bind((host, port))
        except OSError as e:
            return e.strerror or str(e)
    return None


def serve(config: "object") -> None:
    """Start a master for ``config`` (a MasterConfig) and serve until SIGTERM/SIGINT."""
    import uvicorn

    from determined.master._config import MasterConfig
    from determined.master._core import Master
    from determined.master.api._app import create_app

    assert isinstance(config, MasterConfig)
    from determined.master._master_log import install

    install()  # `det master logs`: logging and stdout/stderr lines, kept in memory
    log = logging.getLogger("determined.master")
    url = f"http://{config.host}:{config.port}"
    log.info("serving %s (data dir %s, %s slots)", url, config.data_dir,
             config.resource_manager.slots)
    log.info("web UI at %s/ (REST API docs at /docs)", url)
    # Lifecycle events (``lifecycle: ...``) should stand out: alembic's line per migration
    # step and httpx's line per proxied request (INFO) are left out; the proxy logs its
    # requests at DEBUG.
    for noisy in ("alembic", "httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    master = Master(config)
    master.rm.flags = master.store.scheduling_flags()  # drained agents/slots, before scheduling
    _warn_blank_admin_passwords(master)
    master.start(url=f"http://{config.host}:{config.port}")
    app = create_app(master)
    # log_config=None: uvicorn's warnings go through the master's own handlers (install).
    server = uvicorn.Server(uvicorn.Config(app, host=config.host, port=config.port,
                                           log_level="warning", access_log=False,
                                           log_config=None, timeout_graceful_shutdown=1))
    try:
        server.run()
    finally:
        master.close()


def _warn_blank_admin_passwords(master: "object") -> None:
    """One log line per admin whose blank password cannot log in (anonymous access off)."""
    import logging

    from determined.master.api._auth import blank_password_hint

    store = master.store  # type: ignore[attr-defined]
    if master.config.security.allow_anonymous:  # type: ignore[attr-defined]
        return
    for user in store.list_users():
        if user.admin and user.active and store.check_user_password(user.username, ""):
            logging.getLogger(__name__).warning(
                "admin %r has a blank password. %s", user.username,
                blank_password_hint(user.username))


def set_password(config: "object", username: str, password: str) -> str:
    """Set ``username``'s password in the master's database directly (the operator's
    way to set the admin password before anyone can log in); returns a report line."""
    from determined.master.db import Store

    if not password:
        raise ValueError("Expected a non-empty password. Received: a blank one")
    store = Store(config.db or "")  # type: ignore[attr-defined]
    try:
        store.set_user_password(username, password)
    finally:
        store.close()
    return f"determined-master: the password of {username!r} is set"


def _read_new_password() -> str:
    from determined.common.password import read_password

    return read_password("New password: ", outcome="nothing was changed",
                         action="password change")


def main(argv: Optional[List[str]] = None) -> int:
    from determined.master._config import load_master_config

    p = argparse.ArgumentParser(prog="determined-master")
    p.add_argument("--config", default=os.environ.get("DET_MASTER_CONFIG"),
                   help="master config YAML")
    p.add_argument("--host", default=None)
    p.add_argument("--port", type=int, default=None)
    p.add_argument("--data-dir", dest="data_dir", default=None)
    p.add_argument("--db", default=None)
    p.add_argument("--slots", type=int, default=None)
    p.add_argument("--set-password", metavar="USER", default=None,
                   help="set USER's password in the database (one line of piped stdin, "
                        "else a prompt) and exit")
    args = p.parse_args(argv)
    try:
        config = load_master_config(args.config, host=args.host, port=args.port,
                                    data_dir=args.data_dir, db=args.db, slots=args.slots)
    except (OSError, ValueError) as e:
        print(f"determined-master: {e}", file=sys.stderr)
        return 2
    if args.set_password is not None:
        from determined.common.password import PromptCanceled
        from determined.master.db import NotFoundError

        try:
            print(set_password(config, args.set_password, _read_new_password()))
        except PromptCanceled as e:  # Ctrl-D (1) or Ctrl-C (130) at the prompt
            print(f"determined-master: {e}", file=sys.stderr)
            return 130 if e.interrupted else 1
        except (ValueError, NotFoundError) as e:
            print(f"determined-master: {e}", file=sys.stderr)
            return 2
        return 0
    taken = port_taken(config.host, config.port)
    if taken:  # before migrations and start-up lines: one line saying why
        print(f"determined-master: cannot listen on {config.host}:{config.port}: {taken} "
              "(another master or program holds the port; choose another with --port)",
              file=sys.stderr)
        return 1
    serve(config)
    return 0
