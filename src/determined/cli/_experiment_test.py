"""``det experiment create --test`` against a master: a minimal copy of the experiment.

The copy (SPEC 6.2) has searcher ``single`` (one random hyperparameter sample) of one batch,
``scheduling_unit: 1``, ``min_validation_period: {batches: 1}``, ``save_*: 0``,
``max_restarts: 0`` and description ``[test-mode] ...``. The CLI streams its trial's logs,
archives it when it ends, and exits non-zero unless it completed.
"""

from __future__ import annotations

import argparse
import json

from determined.cli._experiment_remote import follow, read_context
from determined.cli._failures import trial_error_lines
from determined.cli._remote import client, unreachable_hint
from determined.common.api import APIError
from determined.common.console import TrimmedConsole
from determined.common.entrypoint import is_script_entrypoint
from determined.common.wording import NO_SCRIPT_CHECKPOINT
from determined.config import (load_config, one_batch_lengths, test_mode_config,
                               validate_as_written, validate_config)
from determined.errors import MasterError

__all__ = ["create_test_remote"]


def create_test_remote(args: argparse.Namespace) -> int:
    """Submit the test-mode copy, follow it and report; 0 iff its trial completed."""
    if args.paused:
        raise MasterError("--paused cannot be combined with --test-mode: a test experiment "
                          "runs at once")
    packed = read_context(args)
    from determined.cli._git import git_info

    git = git_info(args.model_def) if getattr(args, "git", False) else None
    source = f"experiment config {args.config_file}"
    raw = load_config(args.config_file)
    console = TrimmedConsole(stderr=True)
    with client(args) as c:
        if getattr(args, "template", None):
            from determined.cli._experiment_remote import templated

            raw = templated(c, args.template, raw, args.config_file)
        validate_as_written(raw, source)
        # One batch replaces the length before validation too (whatever its unit).
        config = test_mode_config(validate_config(one_batch_lengths(raw), source=source))
        try:
            exp_id = c.create_experiment(config, packed, activate=True, git=git)
        except APIError as e:
            raise unreachable_hint(e) from None
        if not args.json:
            print(f"Created test-mode experiment {exp_id}", flush=True)
        exp = follow(c, exp_id, console)
        stored = bool(c.list_checkpoints(exp_id))  # deleted after (save_*: 0) but listed
        c.experiment_action(exp_id, "archive")
    trials = exp["trials"]
    passed = exp["state"] == "COMPLETED" and bool(trials) and all(
        t["state"] == "COMPLETED" for t in trials)
    if args.json:
        print(json.dumps({"id": exp_id, "state": exp["state"], "passed": passed,
                          "trials": trials}, default=str))
    if not passed:
        failed = [t for t in trials if t.get("state") == "ERROR"]
        why = trial_error_lines(failed[0]) if failed else []
        if why:  # before where its whole log is (the log above may be long)
            console.print("\n".join(why), markup=False, highlight=False, soft_wrap=True)
        trial = f"trial {trials[0]['id']}" if trials else "no trial"
        raise MasterError(f"Model definition test failed: test-mode experiment {exp_id} ended "
                          f"{exp['state']} ({trial}; its logs are above, or see "
                          f"`det trial logs {trials[0]['id'] if trials else '<id>'}`)")
    if not args.json:
        print("Model definition test succeeded", flush=True)  # upstream's line
        done = "validated and checkpointed" if stored else "validated"
        out = TrimmedConsole()
        out.print(f"Experiment {exp_id} trained 1 batch, {done} (now archived)",
                  highlight=False, soft_wrap=True)
        if not stored:
            out.print(NO_SCRIPT_CHECKPOINT if is_script_entrypoint(config.get("entrypoint"))
                      else "The trial wrote no checkpoint", highlight=False, soft_wrap=True)
    return 0
