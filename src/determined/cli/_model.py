"""``det model create|list|describe|register-version|list-versions`` (the registry)."""

from __future__ import annotations

import argparse
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

from determined.cli._experiment_edit import print_validation
from determined.cli._remote import print_rows, route_name
from determined.util import format_value
from determined.cli._argtypes import checkpoint_uuid, count

__all__ = ["add_parser"]

_SORT = ["name", "description", "creation_time", "last_updated_time"]


def add_parser(nouns: Any) -> None:
    model = nouns.add_parser("model", help="the model registry")
    verbs = model.add_subparsers(dest="verb", metavar="ACTION")

    lst = verbs.add_parser("list", help="list models")
    lst.add_argument("--sort-by", choices=_SORT, default="name", help="field to sort by")
    lst.add_argument("--order-by", choices=["asc", "desc"], default="asc", help="sort order")
    lst.add_argument("--json", action="store_true", help="print JSON")
    lst.set_defaults(func=_list)

    create = verbs.add_parser("create", help="add a model to the registry")
    create.add_argument("name")
    create.add_argument("--description", default="", help="free text")
    create.add_argument("--json", action="store_true", help="print JSON")
    create.set_defaults(func=_create)

    describe = verbs.add_parser("describe", help="show a model and one of its versions")
    describe.add_argument("name")
    describe.add_argument("--version", type=count, default=0,
                          help="the version to show (default: the latest)")
    describe.add_argument("--json", action="store_true", help="print JSON")
    describe.set_defaults(func=_describe)

    register = verbs.add_parser("register-version",
                                help="register a checkpoint as the model's next version")
    register.add_argument("name")
    register.add_argument("uuid", type=checkpoint_uuid, help="the checkpoint's UUID")
    register.add_argument("--json", action="store_true", help="print JSON")
    register.set_defaults(func=_register)

    versions = verbs.add_parser("list-versions", help="list a model's versions")
    versions.add_argument("name")
    versions.add_argument("--json", action="store_true", help="print JSON")
    versions.set_defaults(func=_list_versions)


def _sdk(args: argparse.Namespace) -> Any:
    from determined.experimental import Determined

    return Determined(args.master, user=args.user)


def _model(args: argparse.Namespace) -> Any:
    """The model ``args.name`` (a usage error for a name no route can carry)."""
    return _sdk(args).get_model(route_name("model", args.name))


def _model_row(model: Any) -> Dict[str, Any]:
    row = model.to_json()
    row["metadata"] = json.dumps(model.metadata) if model.metadata else ""
    return row


def _print_model(model: Any, args: argparse.Namespace) -> None:
    print_rows([_model_row(model)],
               ["name", "description", "creation_time", "last_updated_time", "metadata"], args)


_VERSION_COLUMNS = ["version", "uuid", "trial_id", "batch"]


def _searcher_metric(ckpt: Any) -> Tuple[Optional[str], Any]:
    """The name of the searcher metric of the checkpoint's experiment and its value in
    the checkpoint's validation (None without one)."""
    from determined.experimental._client import validation_metrics

    name = (ckpt.experiment_config.get("searcher") or {}).get("metric")
    return name, validation_metrics(ckpt).get(name) if name else None


def _print_versions(ckpts: Sequence[Any], args: argparse.Namespace) -> None:
    """The versions as a table with the searcher metric only (``describe`` and ``--json``
    show every metric): a column named after it, or ``name=value`` cells when the
    versions come from experiments with different searcher metrics."""
    metrics = [_searcher_metric(c) for c in ckpts]
    names = {name for name, _ in metrics}
    column = names.pop() if len(names) == 1 and None not in names else "searcher metric"
    if column in _VERSION_COLUMNS or column == "metadata":  # a metric named like a column
        column = "searcher metric"
    rows = []
    for ckpt, (name, value) in zip(ckpts, metrics):
        shown = "" if value is None else format_value(value)
        if shown and column == "searcher metric":
            shown = f"{name}={shown}"
        rows.append({"version": ckpt.model_version, "uuid": ckpt.uuid,
                     "trial_id": ckpt.trial_id, "batch": ckpt.batch_number, column: shown,
                     "metadata": ckpt.metadata or None})
    print_rows(rows, [*_VERSION_COLUMNS, column, "metadata"], args)


def _version_json(ckpt: Any) -> Dict[str, Any]:
    return {"version": ckpt.model_version, "model_name": ckpt.model_name, "uuid": ckpt.uuid,
            "experiment_id": ckpt.experiment_id, "trial_id": ckpt.trial_id,
            "batch_number": ckpt.batch_number, "validation": ckpt.validation,
            "metadata": ckpt.metadata, "framework": ckpt.framework, "format": ckpt.format}


def _list(args: argparse.Namespace) -> int:
    from determined.experimental import ModelOrderBy, ModelSortBy

    models = _sdk(args).get_models(ModelSortBy[args.sort_by.upper()],
                                   ModelOrderBy.ASC if args.order_by == "asc" else ModelOrderBy.DESC)
    if args.json:
        print(json.dumps([m.to_json() for m in models]))
        return 0
    print_rows([_model_row(m) for m in models],
               ["name", "description", "creation_time", "last_updated_time", "metadata"], args)
    return 0


def _create(args: argparse.Namespace) -> int:
    model = _sdk(args).create_model(route_name("model", args.name), args.description)
    if args.json:
        print(json.dumps(model.to_json()))
    else:
        _print_model(model, args)
    return 0


def _describe(args: argparse.Namespace) -> int:
    model = _model(args)
    ckpt = model.get_version(args.version)
    if args.json:
        print(json.dumps({**model.to_json(),
                          "version": _version_json(ckpt) if ckpt is not None else None}))
        return 0
    _print_model(model, args)
    if ckpt is not None:
        print()
        _print_versions([ckpt], args)
        print_validation(ckpt)
    return 0


def _register(args: argparse.Namespace) -> int:
    ckpt = _model(args).register_version(args.uuid)
    if args.json:
        print(json.dumps(_version_json(ckpt)))
        return 0
    # The table below names the checkpoint; its uuid here made an 88-column line.
    print(f"Registered version {ckpt.model_version} of model {args.name!r}:")
    _print_versions([ckpt], args)
    return 0


def _list_versions(args: argparse.Namespace) -> int:
    model = _model(args)
    versions: List[Any] = model.get_versions()
    if args.json:
        print(json.dumps({"model": model.to_json(),
                          "versions": [_version_json(v) for v in versions]}))
        return 0
    _print_model(model, args)
    print()
    _print_versions(versions, args)
    return 0
