"""A ``det`` command group given no action (``det trial``, ``det e set``): its usage and
its actions, one line each with their help, on stderr, exit status 2 (a usage error,
as 0.13's bare "the following arguments are required" was), no line wider than 80
columns. Groups that act when given no action in 0.13 (``det e`` lists experiments)
still do. No master is needed (``-m`` names a closed port)."""

import argparse

import pytest

from det_cli_testing import run_det, run_det_in_terminal
from determined.cli._main import build_parser

NO_MASTER = ["-m", "http://127.0.0.1:9"]

#: Groups that list their actions, as typed (aliases too) -> (heading, some actions).
LISTING = {
    "experiment label": ("actions", ["add", "remove"]),
    "e label": ("actions", ["add", "remove"]),
    "experiment set": ("fields", ["description", "gc-policy", "max-slots", "weight"]),
    "e set": ("fields", ["description", "gc-policy", "max-slots", "weight"]),
    "trial": ("actions", ["describe", "download", "kill", "logs"]),
    "t": ("actions", ["describe", "download", "kill", "logs"]),
    "checkpoint": ("actions", ["describe", "download"]),
    "c": ("actions", ["describe", "download"]),
    "model": ("actions", ["create", "describe", "list", "list-versions", "register-version"]),
    "task": ("actions", ["list (ls)"]),
    "command": ("actions", ["config", "kill", "list (ls)", "logs", "run"]),
    "cmd": ("actions", ["config", "kill", "list (ls)", "logs", "run"]),
    "notebook": ("actions", ["config", "kill", "list (ls)", "logs", "open", "start"]),
    "shell": ("actions", ["config", "kill", "list (ls)", "logs", "open", "start"]),
    "tensorboard": ("actions", ["config", "kill", "list (ls)", "logs", "open", "start"]),
    "deploy": ("kinds", ["local"]),
    "deploy local": ("actions", ["down", "up"]),
}
#: Groups with an action of their own when given none, as in 0.13 (all ask the master).
ACTING = {"experiment", "agent", "slot", "master", "user", "template"}


@pytest.mark.parametrize("group", sorted(LISTING))
def test_a_group_without_an_action_lists_its_actions(group):
    heading, actions = LISTING[group]
    out = run_det([*NO_MASTER, *group.split()], timeout=60)
    assert out.returncode == 2 and out.stdout == "", out
    lines = out.stderr.splitlines()
    assert lines[0].startswith("usage: det ") and "[-h]" in lines[0], out.stderr
    assert f"{heading}:" in lines, out.stderr
    listed = lines[lines.index(f"{heading}:") + 1:]
    for action in actions:
        line = next((l for l in listed if l.startswith(f"  {action}  ")), None)
        assert line and len(line.split()) > len(action.split()), (action, out.stderr)  # + help
    metavar = {"actions": "ACTION", "fields": "FIELD", "kinds": "KIND"}[heading]
    assert lines[-1].endswith(f": error: {metavar} is required"), out.stderr
    assert "the following arguments are required" not in out.stderr
    assert all(len(line) <= 80 for line in lines), out.stderr


def test_the_listing_names_the_group_as_typed_in_full():
    out = run_det([*NO_MASTER, "e", "set"], timeout=60)
    lines = out.stderr.splitlines()
    assert lines[0] == "usage: det experiment set [-h] [-m MASTER] [-u USER] FIELD ...", lines
    assert lines[-1] == "det experiment set: error: FIELD is required", lines
    # Each field with its help on one line (gc-policy's long help: its first clause).
    assert "  weight       fair-share weight (> 0)" in lines, lines
    assert "  gc-policy    change which checkpoints are kept" in lines, lines


@pytest.mark.parametrize("columns", [80, 200, 50])
def test_on_a_terminal_the_listing_is_at_most_80_columns(columns):
    code, text = run_det_in_terminal([*NO_MASTER, "command"], columns=columns, timeout=60)
    lines = text.strip("\n").splitlines()
    assert code == 2, text
    assert all(len(line) <= min(columns, 80) for line in lines), text
    run = next(line for line in lines if line.startswith("  run "))
    # The help of `run` is too long for one line: what comes before its "; ".
    assert run.split(None, 1)[1].startswith("run a command in the"), text
    assert "prints its output" not in run, text
    if columns < 80:
        assert run.endswith("\u2026"), text  # cut after a word, with an ellipsis


def test_an_action_given_still_runs_it():
    # `det e label add` reaches the master (here none): the action ran, not a listing.
    out = run_det([*NO_MASTER, "e", "label", "add", "1", "x"], timeout=60)
    assert out.returncode == 1 and "no master is reachable" in out.stderr, out
    assert "actions:" not in out.stderr


@pytest.mark.parametrize("group", sorted(ACTING))
def test_groups_that_act_without_an_action_still_do(group):
    out = run_det([*NO_MASTER, group], timeout=60)
    assert out.returncode == 1 and "no master is reachable" in out.stderr, out


def test_every_group_lists_its_actions_or_acts():
    """A group added later gets the listing too, or is one that acts (listed above)."""
    def groups(parser, words):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                if words:
                    yield " ".join(words)
                for name, sub in action.choices.items():
                    if name in {a.dest for a in action._choices_actions}:  # not an alias
                        yield from groups(sub, words + [name])

    found = set(groups(build_parser(), []))
    assert found and found <= (set(LISTING) | ACTING), found - set(LISTING) - ACTING
    assert found >= ACTING, ACTING - found


#: Something that is not an action, as typed -> (heading, the error's last line).
NOT_AN_ACTION = {
    ("e", "label", "1"): ("actions", "det experiment label: error: '1' is not an action; "
                          "the action comes before the id (`det experiment label add 1 "
                          "...`)"),
    ("e", "set", "1"): ("fields", "det experiment set: error: '1' is not a field; the "
                        "field comes before the id (`det experiment set description 1 "
                        "...`)"),
    ("t", "5"): ("actions", "det trial: error: '5' is not an action; the action comes "
                 "before the id (`det trial describe 5 ...`)"),
    ("e", "1"): ("actions", "det experiment: error: '1' is not an action; the action "
                 "comes before the id (`det experiment describe 1 ...`)"),
    ("deploy", "local", "foo"): ("actions", "det deploy local: error: 'foo' is not an "
                                 "action"),
}


@pytest.mark.parametrize("args", sorted(NOT_AN_ACTION), ids=" ".join)
def test_a_group_given_no_action_of_its_own_lists_them(args):
    heading, error = NOT_AN_ACTION[args]
    out = run_det([*NO_MASTER, *args], timeout=60)
    assert out.returncode == 2 and out.stdout == "", out
    lines = out.stderr.splitlines()
    assert lines[0].startswith("usage: det ") and f"{heading}:" in lines, out.stderr
    assert "invalid choice" not in out.stderr and "choose from" not in out.stderr
    assert all(len(line) <= 80 for line in lines), out.stderr
    # The error's last line(s), folded at 80 columns under its text.
    tail = lines[lines.index("", lines.index(f"{heading}:")) + 1:]
    assert " ".join(line.strip() for line in tail) == error, out.stderr


def test_det_itself_given_no_command_of_its_own_names_them():
    out = run_det([*NO_MASTER, "experimnt"], timeout=60)
    assert out.returncode == 2 and "invalid choice: 'experimnt'" in out.stderr, out
