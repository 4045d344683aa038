"""``det experiment label|set|download`` and ``det checkpoint describe|download``."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, Dict

from determined.cli._argtypes import checkpoint_uuid, positive_float, positive_int, priority
from determined.cli._remote import (add_local_flags, client, output_dir, print_rows, sdk,
                                   terminal_width)

__all__ = ["add_experiment_verbs", "add_checkpoint_parser", "parse_bool", "print_checkpoint",
           "print_validation"]


def add_experiment_verbs(verbs: Any) -> None:
    label = verbs.add_parser("label", help="add or remove an experiment label")
    lverbs = label.add_subparsers(dest="label_action", metavar="ACTION")
    for action in ("add", "remove"):
        p = lverbs.add_parser(action, help=f"{action} a label")
        p.add_argument("experiment_id", type=positive_int)
        p.add_argument("label")
        p.set_defaults(func=_label, label_op=action)

    setp = verbs.add_parser("set", help="change an experiment's description, weight, priority or max slots")
    sverbs = setp.add_subparsers(dest="set_field", metavar="FIELD")
    for field, kind, help_text in (
        ("description", str, "description (free text)"),
        ("weight", positive_float, "fair-share weight (> 0)"),
        ("priority", priority, "priority 1..99 (lower runs first with the priority scheduler)"),
        ("max-slots", positive_int, "most slots the experiment may use"),
    ):
        p = sverbs.add_parser(field, help=help_text)
        p.add_argument("experiment_id", type=positive_int)
        # Checked here, named as 0.13 named it (weight, max_slots), not "value".
        p.add_argument("value", type=kind, metavar=field.replace("-", "_"))
        p.set_defaults(func=_set, field=field.replace("-", "_"))

    dl = verbs.add_parser("download", help="download the experiment's best checkpoints")
    dl.add_argument("experiment_id", type=positive_int)
    dl.add_argument("-o", "--output-dir", default="checkpoints", type=output_dir)
    dl.add_argument("--top-n", type=positive_int, default=1)
    dl.add_argument("--sort-by", default=None, help="validation metric (default: the searcher's)")
    dl.add_argument("--smaller-is-better", type=parse_bool, default=None)
    dl.add_argument("-q", "--quiet", action="store_true", help="print only the paths")
    add_local_flags(dl)
    dl.set_defaults(func=_download)


def add_checkpoint_parser(nouns: Any) -> None:
    ckpt = nouns.add_parser("checkpoint", aliases=["c"], help="checkpoints")
    verbs = ckpt.add_subparsers(dest="verb", metavar="ACTION")
    describe = verbs.add_parser("describe", help="show a checkpoint")
    describe.add_argument("uuid", type=checkpoint_uuid)
    describe.add_argument("--json", action="store_true")
    add_local_flags(describe)
    describe.set_defaults(func=_describe_checkpoint)
    dl = verbs.add_parser("download", help="copy a checkpoint to a local directory")
    dl.add_argument("uuid", type=checkpoint_uuid)
    dl.add_argument("-o", "--output-dir", default=None, type=output_dir)
    dl.add_argument("-q", "--quiet", action="store_true")
    add_local_flags(dl)
    dl.set_defaults(func=_download_checkpoint)


def parse_bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"Expected true or false. Received: {text!r}")


def _label(args: argparse.Namespace) -> int:
    import sys

    with client(args) as c:
        exp = c.get_experiment(args.experiment_id)
        labels = list(exp.get("labels") or [])
        adding = args.label_op == "add"
        if adding == (args.label in labels):  # nothing to change: said, not an error
            had = "already had" if adding else "had no"
            print(f"det: experiment {exp['id']} {had} label {args.label!r}", file=sys.stderr)
        else:
            labels = labels + [args.label] if adding else [
                label for label in labels if label != args.label]
            exp = c.patch_experiment(args.experiment_id, labels=labels)
    print(f"Experiment {exp['id']} labels: {', '.join(exp.get('labels') or []) or '(none)'}")
    return 0


def _set(args: argparse.Namespace) -> int:
    with client(args) as c:
        c.patch_experiment(args.experiment_id, **{args.field: args.value})
    field = args.field.replace("_", "-")  # as typed: max-slots
    print(f"Experiment {args.experiment_id}: {field} set to {args.value}")
    return 0


def print_checkpoint(ckpt: Any, path: str, quiet: bool) -> None:
    if quiet:
        print(path)
        return
    print(f"Local checkpoint path: {path}")
    print_rows([{"batch": ckpt.batch_number, "uuid": ckpt.uuid}], ["batch", "uuid"],
               argparse.Namespace(), labels={"batch": _unit(ckpt)})
    print_validation(ckpt)


def _unit(ckpt: Any) -> str:
    """What the checkpoint's ``batch_number`` counts: ``batch``, or a script's ``epoch``..."""
    from determined.common.entrypoint import step_unit

    return step_unit(getattr(ckpt, "experiment_config", None) or {})


def print_validation(ckpt: Any) -> None:
    """``Validation metrics: name=value, ...`` of a checkpoint (4 significant digits;
    ``--json`` has every one), wrapped to the terminal."""
    import textwrap

    from determined.util import format_metrics

    metrics = _flat_validation(ckpt)
    text = (f"Validation metrics: {format_metrics(metrics)}" if metrics
            else "Validation metrics: none (the checkpoint has no validation)")
    width = terminal_width()
    print(textwrap.fill(text, width, subsequent_indent="  ", break_long_words=False,
                        break_on_hyphens=False) if width else text)


def _flat_validation(ckpt: Any) -> Dict[str, Any]:
    from determined.experimental._client import validation_metrics

    return validation_metrics(ckpt) or {}


def _download(args: argparse.Namespace) -> int:
    exp = sdk(args).get_experiment(args.experiment_id)
    best = exp.top_n_checkpoints(args.top_n, args.sort_by, args.smaller_is_better)
    if not best:  # it printed nothing and exited 0
        from determined.errors import CheckpointError

        raise CheckpointError(exp.no_checkpoint_reason(args.sort_by))
    for ckpt in best:
        path = ckpt.download(os.path.join(args.output_dir, ckpt.uuid))
        print_checkpoint(ckpt, path, args.quiet)
    return 0


def _describe_checkpoint(args: argparse.Namespace) -> int:
    ckpt = sdk(args).get_checkpoint(args.uuid)
    row = {"uuid": ckpt.uuid, "experiment_id": ckpt.experiment_id, "trial_id": ckpt.trial_id,
           "batch": ckpt.batch_number, "framework": ckpt.framework, "format": ckpt.format,
           "validation": ckpt.validation, "path": ckpt.path,
           "size_bytes": sum(ckpt.resources.values())}
    if args.json:
        print(json.dumps(row, default=str))
        return 0
    # One checkpoint: a field a line, so the path fits (a one-row table left it out).
    fields = [("UUID", ckpt.uuid), ("Experiment", ckpt.experiment_id),
              ("Trial", ckpt.trial_id), (_unit(ckpt).capitalize(), ckpt.batch_number),
              ("Framework", ckpt.framework), ("Format", ckpt.format), ("Path", ckpt.path),
              ("Size", f"{row['size_bytes']} bytes")]
    for name, value in fields:
        print(f"{name + ':':<12}{'' if value is None else value}")
    print_validation(ckpt)
    return 0


def _download_checkpoint(args: argparse.Namespace) -> int:
    ckpt = sdk(args).get_checkpoint(args.uuid)
    path = ckpt.download(os.path.join(args.output_dir, ckpt.uuid) if args.output_dir else None)
    print_checkpoint(ckpt, path, args.quiet)
    return 0
