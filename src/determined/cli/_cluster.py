"""``det master config``, ``det agent list``, ``det slot list``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from determined.cli._remote import client, print_rows

__all__ = ["add_parser"]


def add_parser(nouns: Any) -> None:
    master = nouns.add_parser("master", aliases=["m"], help="the master")
    mverbs = master.add_subparsers(dest="verb", metavar="ACTION")
    cfg = mverbs.add_parser("config", help="print the master's config (JSON)")
    cfg.set_defaults(func=_config)
    master.set_defaults(func=_config)
    agent = nouns.add_parser("agent", aliases=["a"], help="agents")
    averbs = agent.add_subparsers(dest="verb", metavar="ACTION")
    alist = averbs.add_parser("list", help="list agents")
    for p in (agent, alist):
        p.add_argument("--json", action="store_true")
        p.add_argument("--csv", action="store_true")
        p.set_defaults(func=_agents)


def _config(args: argparse.Namespace) -> int:
    with client(args) as c:
        print(json.dumps(c.get_master_config(), indent=2))
    return 0


def _agents(args: argparse.Namespace) -> int:
    with client(args) as c:
        rows = c.request("GET", "/agents")["agents"]
    print_rows(rows, ["id", "slots", "used_slots", "enabled", "label"], args)
    return 0
