"""Run the master: ``python -m determined.master [--config FILE] [--port P] ...``."""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

__all__ = ["serve", "main"]


def serve(config: "object") -> None:
    """Start a master for ``config`` (a MasterConfig) and serve until SIGTERM/SIGINT."""
    import uvicorn

    from determined.master._config import MasterConfig
    from determined.master._core import Master
    from determined.master.api._app import create_app

    assert isinstance(config, MasterConfig)
    from determined.master._master_log import install

    install()  # `det master logs`: logging and stdout/stderr lines, kept in memory
    master = Master(config)
    master.rm.flags = master.store.scheduling_flags()  # drained agents/slots, before scheduling
    master.start(url=f"http://{config.host}:{config.port}")
    app = create_app(master)
    server = uvicorn.Server(uvicorn.Config(app, host=config.host, port=config.port,
                                           log_level="warning", access_log=False,
                                           timeout_graceful_shutdown=1))
    try:
        server.run()
    finally:
        master.close()


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
    args = p.parse_args(argv)
    try:
        config = load_master_config(args.config, host=args.host, port=args.port,
                                    data_dir=args.data_dir, db=args.db, slots=args.slots)
    except (OSError, ValueError) as e:
        print(f"determined-master: {e}", file=sys.stderr)
        return 2
    print(f"determined-master: serving http://{config.host}:{config.port} "
          f"(data dir {config.data_dir}, {config.resource_manager.slots} slots)", flush=True)
    print(f"determined-master: web UI at http://{config.host}:{config.port}/ "
          f"(REST API docs at /docs)", flush=True)
    serve(config)
    return 0
