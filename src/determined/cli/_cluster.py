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
    print_rows(rows, ["id", "slots", "used_slots", "enabled", "label"], args)
    return 0
