"""``det master config``, ``det agent list``, ``det slot list``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from determined.cli._remote import client, print_rows

__all__ = ["add_parser", "version"]


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
    slot = nouns.add_parser("slot", aliases=["s"], help="slots")
    sverbs = slot.add_subparsers(dest="verb", metavar="ACTION")
    slist = sverbs.add_parser("list", help="list slots and what runs on them")
    for p in (slot, slist):
        p.add_argument("--json", action="store_true")
        p.add_argument("--csv", action="store_true")
        p.set_defaults(func=_slots)


def _slots(args: argparse.Namespace) -> int:
    with client(args) as c:
        agents = c.request("GET", "/agents")["agents"]
    rows = [{"agent_id": a["id"], "slot_id": s["slot_id"], "enabled": a["enabled"],
             "task": s["task"] or ""} for a in agents for s in a.get("slot_tasks", [])]
    print_rows(rows, ["agent_id", "slot_id", "enabled", "task"], args)
    return 0


def _config(args: argparse.Namespace) -> int:
    with client(args) as c:
        print(json.dumps(c.get_master_config(), indent=2))
    return 0


def _agents(args: argparse.Namespace) -> int:
    with client(args) as c:
        rows = c.request("GET", "/agents")["agents"]
    print_rows(rows, ["id", "type", "address", "slots", "used_slots", "enabled", "label"], args)
    return 0


def version(args: argparse.Namespace) -> int:
    """``det version``: this client's version and, when reachable, the master's."""
    import determined
    from determined.common.api import APIError, MasterClient

    print(f"client: det {determined.__version__}")
    with MasterClient(args.master, timeout=5.0) as c:  # GET /master needs no login
        try:
            info = c.get_master()
        except APIError as e:
            print(f"master: not reachable at {c.url} ({e})")
            return 0
    print(f"master: {info.get('version')} at {c.url} (cluster {info.get('cluster_id')})")
    return 0
