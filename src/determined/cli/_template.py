"""``det template|tpl list|ls [-d] | describe NAME | set NAME FILE | remove|rm NAME``.

A template is a partial experiment config stored on the master; ``det e create
--template NAME`` merges the experiment's config over it (maps merged key by key,
any other value of the experiment's config replacing the template's).
"""

from __future__ import annotations

import argparse
import copy
import json
from typing import Any, Dict

import yaml

from determined.cli._remote import client, print_rows

__all__ = ["add_parser", "fetch_template", "merge_template"]


def add_parser(nouns: Any) -> None:
    tpl = nouns.add_parser("template", aliases=["tpl"], help="experiment config templates")
    verbs = tpl.add_subparsers(dest="verb", metavar="ACTION")
    lst = verbs.add_parser("list", aliases=["ls"], help="list templates")
    lst.add_argument("-d", "--details", action="store_true", help="show each config")
    lst.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                     help="print JSON")
    lst.set_defaults(func=_list)
    tpl.set_defaults(func=_list, details=False)
    describe = verbs.add_parser("describe", help="print a template's config (YAML)")
    describe.add_argument("template_name")
    describe.add_argument("--json", action="store_true", help="print JSON")
    describe.set_defaults(func=_describe)
    setp = verbs.add_parser("set", help="create or replace a template from a YAML file")
    setp.add_argument("template_name")
    setp.add_argument("template_file", help="a YAML file with a (partial) experiment config")
    setp.set_defaults(func=_set)
    remove = verbs.add_parser("remove", aliases=["rm"], help="delete a template")
    remove.add_argument("template_name")
    remove.set_defaults(func=_remove)


def fetch_template(c: Any, name: str) -> Dict[str, Any]:
    """The config of the master's template ``name`` (``--template NAME``); a missing one is
    an error naming the flag and how to list templates."""
    from determined.cli._remote import unreachable_hint
    from determined.common.api import APIError
    from determined.errors import MasterError

    try:
        return dict(c.request("GET", _path(name))["config"] or {})
    except APIError as e:
        if e.status == 404:
            raise MasterError(f"--template {name}: the master has no template of that "
                              "name (see `det template list`)") from None
        raise unreachable_hint(e) from None


def merge_template(config: Dict[str, Any], template: Dict[str, Any]) -> Dict[str, Any]:
    """``config`` over ``template``: maps are merged recursively, other values of
    ``config`` win (as upstream merges a template into an experiment config).

    Example:
        >>> merge_template({"a": {"x": 1}, "b": [2]}, {"a": {"y": 0}, "b": [1], "c": 3})
        {'a': {'y': 0, 'x': 1}, 'b': [2], 'c': 3}
    """
    out = copy.deepcopy(template)
    for key, value in config.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_template(value, out[key])
        else:
            out[key] = copy.deepcopy(value)
    return out


def _list(args: argparse.Namespace) -> int:
    with client(args) as c:
        templates = c.request("GET", "/templates")["templates"]
    if getattr(args, "json", False):
        print(json.dumps(templates))
        return 0
    if getattr(args, "details", False):
        rows = [{"name": t["name"], "owner": t.get("owner") or "",
                 "config": yaml.safe_dump(t["config"], default_flow_style=True,
                                          width=10**6).strip()}
                for t in templates]
        print_rows(rows, ["name", "owner", "config"], args)
    else:
        print_rows([{"name": t["name"], "owner": t.get("owner") or ""} for t in templates],
                   ["name", "owner"], args)
    return 0


def _path(name: str) -> str:
    """The template's route, its name quoted (a '?' or '#' in it is part of the name)."""
    from urllib.parse import quote

    return f"/templates/{quote(name, safe='')}"


def _check_name(name: str) -> str:
    from determined.cli._remote import route_name

    return route_name("template", name)


def _describe(args: argparse.Namespace) -> int:
    _check_name(args.template_name)
    with client(args) as c:
        config = c.request("GET", _path(args.template_name))["config"]
    if args.json:
        print(json.dumps(config))
    else:
        print(yaml.safe_dump(config, sort_keys=False, default_flow_style=False), end="")
    return 0


def _set(args: argparse.Namespace) -> int:
    from determined.cli._remote import read_config_text
    from determined.config import parse_yaml

    _check_name(args.template_name)
    config = parse_yaml(read_config_text(args.template_file), source=f"template file {args.template_file}")
    with client(args) as c:
        c.request("PUT", _path(args.template_name), json={"config": config})
    print(f"Set template {args.template_name}")
    return 0


def _remove(args: argparse.Namespace) -> int:
    _check_name(args.template_name)
    with client(args) as c:
        c.request("DELETE", _path(args.template_name))
    print(f"Removed template {args.template_name}")
    return 0
