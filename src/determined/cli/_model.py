"""``det model create|list|describe|register-version|list-versions`` (the registry)."""

from __future__ import annotations

import argparse
import json
from typing import Any, Dict, List

from determined.cli._remote import print_rows

__all__ = ["add_parser"]

_SORT = ["name", "description", "creation_time", "last_updated_time"]


def add_parser(nouns: Any) -> None:
    model = nouns.add_parser("model", help="the model registry")
    verbs = model.add_subparsers(dest="verb", metavar="ACTION", required=True)

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
    describe.add_argument("--version", type=int, default=0,
                          help="the version to show (default: the latest)")
    describe.add_argument("--json", action="store_true", help="print JSON")
    describe.set_defaults(func=_describe)

    register = verbs.add_parser("register-version",
                                help="register a checkpoint as the model's next version")
    register.add_argument("name")
    register.add_argument("uuid", help="the checkpoint's UUID")
    register.add_argument("--json", action="store_true", help="print JSON")
    register.set_defaults(func=_register)

    versions = verbs.add_parser("list-versions", help="list a model's versions")
    versions.add_argument("name")
    versions.add_argument("--json", action="store_true", help="print JSON")
    versions.set_defaults(func=_list_versions)


def _sdk(args: argparse.Namespace) -> Any:
    from determined.experimental import Determined

    return Determined(args.master, user=args.user)


def _model_row(model: Any) -> Dict[str, Any]:
    row = model.to_json()
    row["metadata"] = json.dumps(model.metadata) if model.metadata else ""
    return row


def _print_model(model: Any, args: argparse.Namespace) -> None:
    print_rows([_model_row(model)],
               ["name", "description", "creation_time", "last_updated_time", "metadata"], args)


def _version_row(ckpt: Any) -> Dict[str, Any]:
    from determined.experimental._client import validation_metrics

    return {"version": ckpt.model_version, "uuid": ckpt.uuid, "trial_id": ckpt.trial_id,
            "batch": ckpt.batch_number, "validation": validation_metrics(ckpt) or None,
            "metadata": ckpt.metadata or None}


def _version_json(ckpt: Any) -> Dict[str, Any]:
    return {"version": ckpt.model_version, "model_name": ckpt.model_name, "uuid": ckpt.uuid,
            "experiment_id": ckpt.experiment_id, "trial_id": ckpt.trial_id,
            "batch_number": ckpt.batch_number, "validation": ckpt.validation,
            "metadata": ckpt.metadata, "framework": ckpt.framework, "format": ckpt.format}


_VERSION_COLUMNS = ["version", "uuid", "trial_id", "batch", "validation", "metadata"]


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
    model = _sdk(args).create_model(args.name, args.description)
    if args.json:
        print(json.dumps(model.to_json()))
    else:
        _print_model(model, args)
    return 0


def _describe(args: argparse.Namespace) -> int:
    model = _sdk(args).get_model(args.name)
    ckpt = model.get_version(args.version)
    if args.json:
        print(json.dumps({**model.to_json(),
                          "version": _version_json(ckpt) if ckpt is not None else None}))
        return 0
    _print_model(model, args)
    if ckpt is not None:
        print()
        print_rows([_version_row(ckpt)], _VERSION_COLUMNS, args)
    return 0


def _register(args: argparse.Namespace) -> int:
    ckpt = _sdk(args).get_model(args.name).register_version(args.uuid)
    if args.json:
        print(json.dumps(_version_json(ckpt)))
        return 0
    print(f"Registered checkpoint {ckpt.uuid} as version {ckpt.model_version} of model "
          f"{args.name!r}")
    print_rows([_version_row(ckpt)], _VERSION_COLUMNS, args)
    return 0


def _list_versions(args: argparse.Namespace) -> int:
    model = _sdk(args).get_model(args.name)
    versions: List[Any] = model.get_versions()
    if args.json:
        print(json.dumps({"model": model.to_json(),
                          "versions": [_version_json(v) for v in versions]}))
        return 0
    _print_model(model, args)
    print()
    print_rows([_version_row(v) for v in versions], _VERSION_COLUMNS, args)
    return 0
