"""``det master config|info|logs``, ``det agent list|enable|disable``,
``det slot list|enable|disable``, ``det version``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Callable, Dict, List

from determined.cli._remote import add_format_flags, client, print_rows, usage_error
from determined.cli._argtypes import count

__all__ = ["add_parser", "version"]


def add_parser(nouns: Any) -> None:
    master = nouns.add_parser("master", aliases=["m"], help="the master")
    mverbs = master.add_subparsers(dest="verb", metavar="ACTION")
    cfg = mverbs.add_parser("config", help="print the master's config (JSON, as 0.13 did)")
    fmt = cfg.add_mutually_exclusive_group()
    fmt.add_argument("--yaml", action="store_true",
                     help="print YAML, as `det e config` prints an experiment's")
    fmt.add_argument("--json", action="store_true", help="print JSON (the default)")
    cfg.set_defaults(func=_config)
    info = mverbs.add_parser("info", help="the master's version, cluster id and address")
    info.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                      help="print JSON (for scripts)")
    info.set_defaults(func=_info)
    logs = mverbs.add_parser("logs", help="print the master's own log")
    logs.add_argument("-f", "--follow", action="store_true", help="wait for new lines")
    logs.add_argument("--tail", type=count, default=None, metavar="N",
                      help="only the last N lines")
    logs.set_defaults(func=_logs)
    master.set_defaults(func=_config)

    averbs = _listing_noun(nouns, "agent", "a", "agents", "list agents", _agents)
    for verb in ("enable", "disable"):
        p = averbs.add_parser(verb, help=f"{verb} scheduling new trials on an agent"
                              + (" (running trials go on)" if verb == "disable" else ""))
        p.add_argument("agent_id", nargs="?", default=None, help="the agent (or --all)")
        p.add_argument("--all", action="store_true", help=f"{verb} every agent")
        p.set_defaults(func=_agent_toggle, enable=verb == "enable")

    sverbs = _listing_noun(nouns, "slot", "s", "slots", "list slots and what runs on them",
                           _slots)
    for verb in ("enable", "disable"):
        p = sverbs.add_parser(verb, help=f"{verb} scheduling new trials on a slot"
                              + (" (a running trial goes on)" if verb == "disable" else ""))
        p.add_argument("agent_id")
        p.add_argument("slot_id", type=count)
        p.set_defaults(func=_slot_toggle, enable=verb == "enable")


def _listing_noun(nouns: Any, name: str, alias: str, help: str, list_help: str,
                  func: Callable[[argparse.Namespace], int]) -> Any:
    """A noun that lists when given no verb or ``list`` (``det agent``, ``det agent list``,
    with the output flags on both); its verbs, to add more."""
    noun = nouns.add_parser(name, aliases=[alias], help=help)
    verbs = noun.add_subparsers(dest="verb", metavar="ACTION")
    listing = verbs.add_parser("list", help=list_help)
    add_format_flags(noun)
    add_format_flags(listing, suppress=True)
    for p in (noun, listing):
        p.set_defaults(func=func)
    return verbs


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def _gpu_summary(gpus: List[Dict[str, Any]]) -> Dict[str, str]:
    """An agent's GPUs in three short cells: ``2x NAME``, each one's memory, slots per GPU."""
    if not gpus:
        return {"gpus": "", "gpu_memory": "", "slots_per_gpu": ""}
    names: Dict[str, int] = {}
    for g in gpus:
        names[g["name"]] = names.get(g["name"], 0) + 1
    return {"gpus": ", ".join(f"{n}x {name}" for name, n in names.items()),
            "gpu_memory": ", ".join(sorted({_gib(g["memory_total"]) for g in gpus})),
            "slots_per_gpu": ", ".join(sorted({str(g.get("slots", 1)) for g in gpus}))}


def _slots(args: argparse.Namespace) -> int:
    with client(args) as c:
        agents = c.request("GET", "/agents")["agents"]
    rows = []
    for a in agents:
        for s in a.get("slot_tasks", []):
            gpu = s.get("gpu") or {}
            rows.append({"agent_id": a["id"], "slot_id": s["slot_id"],
                         "enabled": a["enabled"] and s.get("enabled", True),
                         "task": s["task"] or "",
                         "gpu": f"{gpu['index']}: {gpu['name']}" if gpu else "",
                         "gpu_memory": _gib(gpu["memory_total"]) if gpu else ""})
    columns = ["agent_id", "slot_id", "enabled", "task"]
    if any(r["gpu"] for r in rows):  # slots sharing a GPU show the same one
        columns += ["gpu", "gpu_memory"]
    print_rows(rows, columns, args)
    return 0


def _config(args: argparse.Namespace) -> int:
    with client(args) as c:
        config = c.get_master_config()
    if getattr(args, "yaml", False):
        import yaml

        sys.stdout.write(yaml.safe_dump(config, sort_keys=False, default_flow_style=False))
    else:
        print(json.dumps(config, indent=4))  # 0.13's output: scripts parse it
    return 0


def _info(args: argparse.Namespace) -> int:
    from determined.common.api import MasterClient

    with MasterClient(args.master, timeout=10.0) as c:  # GET /master needs no login
        info = c.get_master()
    if getattr(args, "json", False):
        print(json.dumps(info))
        return 0
    for key in ("version", "cluster_id", "master_id", "url"):
        if key in info:
            print(f"{key}: {info[key]}")
    return 0


def _master_line(line: Dict[str, Any]) -> str:
    """A line of the master's log as its terminal shows it: ``12:04:31 INFO lifecycle: ...``
    (a line without a readable time or level as it came)."""
    import datetime

    from determined.common.log_format import log_line

    try:
        when = datetime.datetime.fromisoformat(line["timestamp"])
    except (KeyError, TypeError, ValueError):
        return str(line["line"])
    return log_line(when, str(line.get("level") or "INFO"), line["line"])


def _logs(args: argparse.Namespace) -> int:
    with client(args) as c:
        params: Any = {"tail": args.tail} if args.tail is not None else {}
        after = 0
        while True:
            lines = c.request("GET", "/master/logs", params={**params, "after_id": after})["logs"]
            for line in lines:
                print(_master_line(line), flush=True)
                after = line["id"]
            params = {}
            if len(lines) >= 1000:
                continue
            if not args.follow:
                return 0
            time.sleep(0.5)


def _agents(args: argparse.Namespace) -> int:
    with client(args) as c:
        rows = c.request("GET", "/agents")["agents"]
    columns = ["id", "type", "address", "slots", "used_slots", "enabled", "label"]
    if any(a.get("gpus") for a in rows) and not getattr(args, "json", False):
        for a in rows:
            a.update(_gpu_summary(a.get("gpus") or []))
        columns += ["gpus", "gpu_memory", "slots_per_gpu"]
    print_rows(rows, columns, args)
    return 0


def _agent_toggle(args: argparse.Namespace) -> int:
    if bool(args.agent_id) == bool(args.all):
        usage_error("give an agent id or --all (not both)")
    verb = "enable" if args.enable else "disable"
    with client(args) as c:
        ids = ([a["id"] for a in c.request("GET", "/agents")["agents"]] if args.all
               else [args.agent_id])
        for agent_id in ids:
            c.request("POST", f"/agents/{agent_id}/{verb}")
            print(f"{verb.capitalize()}d agent {agent_id}")
    return 0


def _slot_toggle(args: argparse.Namespace) -> int:
    verb = "enable" if args.enable else "disable"
    with client(args) as c:
        c.request("POST", f"/agents/{args.agent_id}/slots/{args.slot_id}/{verb}")
    print(f"{verb.capitalize()}d slot {args.slot_id} of agent {args.agent_id}")
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
    # The cluster id on a line of its own: with a URL and a version the line passed 80
    # columns.
    print(f"master: {info.get('version')} at {c.url}\ncluster: {info.get('cluster_id')}")
    return 0
