"""``det`` as upstream 0.13.0 spells it: every command, alias and flag of
``cli-0.13.0.md`` (a copy of the upstream command tree) parses, for every feature that
exists here; global flags after the command; 80-column output; completion; one-line
errors (bad master URL, a config that is not UTF-8); Ctrl-D or Ctrl-C at a password
prompt cancels the login, on a real master that then has no session."""

import argparse
import contextlib
import json
import os
import pathlib
import re
import sqlite3
import subprocess
import sys
import time

import pytest

from det_cli_testing import run_det, run_det_in_terminal
from determined.cli._main import build_parser

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))
from master_testing import MasterProcess  # noqa: E402

CONTRACT = pathlib.Path(__file__).with_name("cli-0.13.0.md")

#: Upstream commands and flags without the feature here, and why (README: compatibility).
NOT_HERE: dict = {}
#: A value of the shape a positional is checked for while parsing ("1" for the others).
PLACEHOLDERS = {"uuid": "4f9a1c2e-1111-2222-3333-444455556666"}
#: Nouns another part of the project adds (checked as soon as they are registered).
LATER_NOUNS = {"notebook", "command", "shell", "tensorboard", "task"}


def contract():
    """(path words, aliases of the last word, positionals, option strings) per command."""
    out = []
    for line in CONTRACT.read_text().splitlines():
        if not line.startswith("det "):
            continue
        left, _, right = line.partition("   ")
        aliases = re.findall(r"\(([^)]*)\)", left)
        words = re.sub(r"\([^)]*\)", "", left).split()[1:]
        options, positionals = [], []
        for token in right.split():
            if token.startswith("-"):
                options += token.split("/")
            else:
                positionals.append(token)
        out.append((words, aliases[0].split()[1:] if aliases else [], positionals, options))
    return out


def subcommands(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return {}


def test_every_upstream_command_and_flag_parses():
    parser = build_parser()
    checked = 0
    for words, aliases, positionals, options in contract():
        if tuple(words) in NOT_HERE or not words:
            continue
        if words[0] not in subcommands(parser):
            assert words[0] in LATER_NOUNS, f"det {words[0]} is missing"
            continue
        node, parent = parser, None
        for word in words:
            choices = subcommands(node)
            assert word in choices, f"det {' '.join(words)}: no {word!r}"
            parent, node = node, choices[word]
        for alias in aliases:
            assert subcommands(parent).get(alias) is node, f"det {' '.join(words)}: alias {alias}"
        for option in options:
            if tuple(words) + (option,) in NOT_HERE:
                continue
            assert option in node._option_string_actions, f"det {' '.join(words)} {option}"
        if subcommands(node):
            continue  # a noun: its verbs are checked on their own lines
        positionals = [p for p in positionals if tuple(words) + (p,) not in NOT_HERE]
        required = [arg for a in node._actions if a.required and a.option_strings
                    for arg in (a.option_strings[0], "1")]
        for group in node._mutually_exclusive_groups:
            if group.required:
                first = group._group_actions[0]
                required += [first.option_strings[0]] + (["1"] if first.nargs != 0 else [])
        args = parser.parse_args([*words, *(PLACEHOLDERS.get(p, "1") for p in positionals),
                                  *required])
        assert callable(getattr(args, "func", None)), f"det {' '.join(words)} does nothing"
        checked += 1
    assert checked >= 45


@pytest.mark.parametrize("argv", [
    ["agent", "--json", "list"], ["agent", "list", "--json"], ["e", "lt", "1", "--csv"],
    ["e", "list", "-m", "http://h:1"], ["-m", "http://h:1", "e", "list"],
    ["slot", "--csv", "list"], ["e", "create", "c.yaml", ".", "-f", "-t"],
])
def test_global_and_format_flags_before_or_after_the_command(argv):
    args = build_parser().parse_args(argv)
    if "-m" in argv:
        assert args.master == "http://h:1"
    if "--json" in argv:
        assert args.json is True
    if "--csv" in argv:
        assert args.csv is True
    if "-t" in argv:
        assert args.test_mode and args.follow


def test_user_flag_after_the_command():
    assert build_parser().parse_args(["user", "whoami", "-u", "alice"]).user == "alice"
    assert build_parser().parse_args(["-u", "bob", "e", "list"]).user == "bob"


@pytest.mark.parametrize("master", ["http://bad host:80", "localhost:99999", "ftp://x", ":8080"])
def test_bad_master_url_is_one_line(master):
    out = run_det(["-m", master, "e", "list"])
    assert out.returncode == 1
    assert out.stderr.startswith("det: error: Invalid master address")
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_config_that_is_not_utf8_is_one_line(tmp_path, tiny_dir):
    config = tmp_path / "latin1.yaml"
    config.write_bytes("description: caf\xe9\n".encode("latin-1")
                      + (tiny_dir / "const.yaml").read_bytes())
    for extra in ([], ["--local", "--test"]):
        out = run_det(["-m", "http://127.0.0.1:9", "e", "create", config, tiny_dir, *extra])
        assert out.returncode != 0
        assert "Traceback" not in out.stderr, out.stderr
        errors = [line for line in out.stderr.splitlines() if "error" in line]
        assert errors and "UTF-8" in errors[0] and "latin1.yaml" in out.stderr, out.stderr


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = MasterProcess(str(tmp_path_factory.mktemp("master")), slots=1).start()
    yield m
    m.stop()


def _sessions(master) -> int:
    """Logged-in sessions the master has recorded (its auth records, in its database)."""
    with contextlib.closing(sqlite3.connect(os.path.join(master.data_dir, "master.db"))) as db:
        return db.execute("SELECT COUNT(*) FROM auth_tokens WHERE kind = 'user'").fetchone()[0]


@pytest.mark.parametrize("key,code", [("\x04", 1), ("\x03", 130)], ids=["ctrl-d", "ctrl-c"])
def test_ctrl_d_or_ctrl_c_at_the_password_prompt_cancels_the_login(master, tmp_path, key, code):
    # `determined` has the blank password: a blank answer read from Ctrl-D would log in.
    auth = tmp_path / "auth"
    before = _sessions(master)
    got, text = run_det_in_terminal(["-m", master.url, "user", "login", "determined"],
                                    env={"DET_AUTH_DIR": str(auth)}, timeout=120.0,
                                    answer=("Password", key))
    assert got == code, text
    # The shell's prompt starts on a line of its own; one line says what stopped.
    assert text == "Password for user 'determined': \ndet: login canceled\n", text
    assert _sessions(master) == before and not (auth / "auth.json").exists(), text


def test_a_blank_answer_at_the_password_prompt_logs_in(master, tmp_path):
    """The check above can fail: Enter (a blank password) does log in and is recorded."""
    auth = tmp_path / "auth"
    before = _sessions(master)
    got, text = run_det_in_terminal(["-m", master.url, "user", "login", "determined"],
                                    env={"DET_AUTH_DIR": str(auth)}, timeout=120.0,
                                    answer=("Password", "\r"))
    assert got == 0 and "Logged in as user 'determined'" in text, text
    assert _sessions(master) == before + 1 and (auth / "auth.json").exists(), text


def test_an_error_in_a_terminal_fits_its_width(tmp_path, tiny_dir):
    """A refused config's error lines are folded at the terminal's width (80 columns),
    bullets hanging under their text; the config's long path is never broken."""
    deep = tmp_path / ("a-directory-with-a-long-name-" * 2) / "and-another-one-below-it"
    deep.mkdir(parents=True)
    config = deep / "typo.yaml"
    config.write_text((tiny_dir / "const.yaml").read_text().replace(
        "searcher:", "searcher:\n  smoothing_of_the_metric_over_many_windows: 3", 1))
    code, text = run_det_in_terminal(["e", "create", config, tiny_dir, "--local", "--test"],
                                     columns=80, env={"DET_LOCAL_DIR": str(tmp_path / "local")},
                                     timeout=120.0)
    lines = text.strip().splitlines()
    assert code == 1 and lines[0].startswith("det: error: "), text
    # Only a word longer than the terminal (the path) may overflow, on a line of its own.
    assert all(len(line) <= 80 or " " not in line.strip() for line in lines), text
    assert str(config) in lines[1], text  # one piece, copyable
    bullet = next(i for i, line in enumerate(lines) if line.startswith("  - "))
    assert "smoothing_of_the_metric_over_many_windows" in text, text
    assert all(line.startswith("  ") for line in lines[1:]), text  # hung under det: error:
    assert bullet > 0


def test_error_text_folds_the_message_but_never_a_traceback():
    from determined.cli._errors import error_text

    frame = '  File "/a/rather/long/path/to/a/model/directory/of/the/user/model_def.py", line 84'
    message = ("the trial raised an error while training, at batch 3 of the first epoch of "
               f"the run\nTraceback (most recent call last):\n{frame}, in train_batch\n"
               "    raise ValueError(f'planned failure at batch {batch_idx}')\n"
               "ValueError: planned failure at batch 3")
    lines = error_text(message, 80).splitlines()
    tb = lines.index("Traceback (most recent call last):")
    assert tb == 2 and all(len(line) <= 80 for line in lines[:tb]), lines  # folded above
    assert lines[tb + 1:] == message.splitlines()[2:], lines  # as written below
    assert error_text(message) == "det: error: " + message  # no terminal: as it is


def test_a_user_traceback_in_a_terminal_is_never_folded(tmp_path, tiny_dir):
    """A failed local run's error quotes the trial's traceback: its lines (a deep model
    directory's path) are printed as written, not broken at 80 columns."""
    import shutil

    deep = tmp_path / ("a-directory-with-a-long-name-" * 2) / "and-another-one-below-it"
    shutil.copytree(tiny_dir, deep)
    config = deep / "fails.yaml"
    config.write_text((tiny_dir / "const.yaml").read_text().replace(
        "  dropout: 0.2", "  dropout: 0.2\n  fail_at_batch: 0", 1))
    code, text = run_det_in_terminal(["e", "create", config, deep, "--local", "--test"],
                                     columns=80, env={"DET_LOCAL_DIR": str(tmp_path / "local")},
                                     timeout=120.0)
    lines = text.splitlines()
    assert code == 1, text
    frame = next(line for line in lines if line.startswith('  File "'))
    assert len(frame) > 80 and frame.startswith(f'  File "{deep}/model_def.py", line '), text
    # The traceback as written, then det's one error naming the method.
    assert "ValueError: planned failure at batch 0" in lines, text
    assert lines[-1].endswith("TinyTrial.train_batch raised ValueError: planned failure at "
                              "batch 0"), text


def test_tables_fit_80_columns():
    from determined.cli._remote import table_text
    from determined.cli._trial import TRIAL_COLUMNS

    row = {"trial_id": 12, "experiment_id": 3, "state": "COMPLETED",
           "hparams": {"lr": 0.000123456, "dropout": 0.25, "global_batch_size": 64,
                       "layers": 4},
           "total_batches": 12000, "restarts": 0, "best_validation": 0.0123456789,
           "latest_checkpoint": "4f9a1c2e-1111-2222-3333-444455556666",
           "start_time": "2026-11-23T19:03:25.123456+00:00", "end_time": None}
    text = table_text([row], TRIAL_COLUMNS, width=80)
    assert all(len(line) <= 80 for line in text.splitlines()), text
    assert "lr=0.0001235 dropout=0.25" in text  # compact hyperparameters
    assert "(hidden: " in text and "--csv/--json show all)" in text  # what was left out
    wide = table_text([row], ["trial_id", "start_time"], width=80)
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s*$", wide.splitlines()[-1])  # seconds


def test_a_checkpoint_list_at_80_columns_keeps_the_uuids():
    """The UUID is what one copies from a checkpoint list (to download or register it);
    a long metric name in the header pushed it out at 80 columns."""
    from determined.cli._experiment_show import CHECKPOINT_COLUMNS
    from determined.cli._remote import table_text

    uuid = "4f9a1c2e-1111-2222-3333-444455556666"
    row = {"trial_id": 17, "batches": 1500, "state": "COMPLETED", "validation_error": 0.0131579,
           "uuid": uuid, "size_bytes": 81510, "end_time": "2026-11-27T10:24:41+00:00"}
    # As `det e lc` makes them: the searcher metric's column has the metric's name.
    columns = [c if c != "validation" else "validation_error" for c in CHECKPOINT_COLUMNS]
    text = table_text([row], columns, width=80)
    assert all(len(line) <= 80 for line in text.splitlines()), text
    assert uuid in text and "0.0131579" in text and "COMPLETED" in text, text


def test_follow_status_line_fits_80_columns():
    import io

    from rich.console import Console

    from determined.cli._progress import ExperimentProgress, summarize

    trials = [{"state": "ACTIVE", "best_validation": 0.25, "total_batches": 1200}] * 7
    trials += [{"state": "COMPLETED", "best_validation": 0.125, "total_batches": 99000}] * 9
    exp = {"id": 1234, "state": "ACTIVE", "progress": 0.4567, "trials": trials,
           "config": {"searcher": {"metric": "a_rather_long_validation_metric_name",
                                   "smaller_is_better": True}}}
    assert len("Experiment 1234: ACTIVE 46% | " + summarize(exp, 50)) <= 80
    assert "a_rather_long_validation_metric_name" in summarize(exp)  # piped: everything
    terminal = io.StringIO()
    console = Console(file=terminal, width=80, force_terminal=True, color_system=None)
    with ExperimentProgress(1234, console) as progress:
        progress.update(exp)
    lines = [l for l in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal.getvalue()).splitlines()
             if l.strip()]
    assert lines and all(len(l) <= 80 for l in lines), lines
    assert "ACTIVE" in lines[-1] and "46%" in lines[-1], lines


def test_shell_completion(tmp_path):
    env = dict(os.environ, _ARGCOMPLETE="1", _ARGCOMPLETE_IFS="\n", COMP_LINE="det e l",
               COMP_POINT="7", _ARGCOMPLETE_STDOUT_FILENAME=str(tmp_path / "out"))
    subprocess.run([sys.executable, "-m", "determined.cli"], env=env, timeout=60,
                   capture_output=True)
    words = (tmp_path / "out").read_text().split()
    assert {"list", "list-trials", "list-checkpoints", "lt", "lc", "label"} <= set(words), words


def test_an_empty_list_at_80_columns_keeps_its_headers_whole():
    """With no rows the headers are all a table shows: `det task list` on a new master
    printed `descript…` and `end_reas…`; columns are left out instead (named)."""
    from determined.cli._remote import table_text
    from determined.cli._tasks import TASK_COLUMNS, _TASK_DROP_FIRST

    text = table_text([], TASK_COLUMNS, width=80, drop_first=_TASK_DROP_FIRST)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), text
    assert "…" not in lines[0] and "description" in lines[0], text
    assert lines[-1].startswith("(hidden: "), text


def test_a_usage_error_folds_at_the_terminal_width_as_other_errors():
    """``usage_error`` (a bad flag value, checked before any master is asked) folds its
    message at a terminal's width, as ``det``'s other errors do; exit status 2 stays."""
    code, text = run_det_in_terminal(
        ["-m", "http://127.0.0.1:9", "cmd", "run", "-v",
         "a/relative/directory/on/the/host:/data", "true"], columns=80, timeout=120.0)
    lines = text.strip().splitlines()
    assert code == 2 and lines[0].startswith("det: error: -v/--volume "), text
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines), text
    assert all(line.startswith("  ") for line in lines[1:]), text  # hung under det: error:
    assert "HOST must be an absolute path on the agent's machine" in " ".join(
        line.strip() for line in lines), text


def test_delete_without_yes_is_refused_before_asking_when_the_master_would_refuse(
        master, tmp_path, tiny_dir):
    """``det e delete ID`` asks "are you sure" only for a deletion the master would make:
    someone who may not delete it, or an experiment not finished, is told so first."""
    env = {"DET_AUTH_DIR": str(tmp_path / "auth")}
    created = run_det(["-m", master.url, "e", "create", tiny_dir / "const.yaml", tiny_dir,
                       "--paused"], env=env)
    assert created.returncode == 0, created.stderr
    exp_id = created.stdout.split("Created experiment ")[1].split()[0]
    made = run_det(["-m", master.url, "-u", "admin", "user", "create", "may-not-delete"],
                   env=env)
    assert made.returncode == 0, made.stderr

    def delete(*user):
        # "y" typed at the question, were it asked: the test sees whether it was.
        return run_det_in_terminal(["-m", master.url, *user, "e", "delete", exp_id],
                                   env=env, timeout=120.0, answer=("[y/N]", "y\n"))

    code, text = delete("-u", "may-not-delete")
    assert code == 1 and "[y/N]" not in text, text
    assert "may not delete experiment" in text and "'determined'" in text, text
    code, text = delete()  # its owner, but it is paused, not finished
    assert code == 1 and "[y/N]" not in text and "kill it first" in text, text
    killed = run_det(["-m", master.url, "e", "kill", exp_id], env=env)
    assert killed.returncode == 0, killed.stderr
    deadline = time.monotonic() + 60
    while json.loads(run_det(["-m", master.url, "e", "list", "--json"], env=env).stdout)[0][
            "state"] != "CANCELED":
        assert time.monotonic() < deadline, "the killed experiment never ended"
        time.sleep(0.2)
    code, text = run_det_in_terminal(["-m", master.url, "e", "delete", exp_id], env=env,
                                     timeout=120.0, answer=("[y/N]", "n\n"))
    assert code == 1, text
    assert f"Delete experiment {exp_id}, its 0 checkpoints and all its records?" in text, text
    assert "Nothing deleted (confirm with --yes)" in text, text
    listed = run_det(["-m", master.url, "e", "list", "--json"], env=env)
    assert [e["id"] for e in json.loads(listed.stdout)] == [int(exp_id)], listed.stdout


def test_a_long_owner_wraps_in_task_lists_as_headers_do(master, tmp_path):
    """``det cmd list -a`` (and the notebook, shell and TensorBoard lists, one table) at
    80 columns: a long owner wraps at ``-`` onto the row's next lines, as long headers
    do, never cut with an ellipsis; no line is wider than the terminal."""
    from det_cli_testing import table_rule

    env = {"DET_AUTH_DIR": str(tmp_path / "auth")}
    owner = "a-rather-long-username-of-the-research-team"
    made = run_det(["-m", master.url, "-u", "admin", "user", "create", owner], env=env)
    assert made.returncode == 0, made.stderr
    ran = run_det(["-m", master.url, "-u", owner, "cmd", "run", "-d",
                   "--config", "resources.slots=0", "true"], env=env)
    assert ran.returncode == 0, ran.stderr
    code, text = run_det_in_terminal(["-m", master.url, "cmd", "list", "-a"], env=env,
                                     timeout=120.0)
    lines = text.strip().splitlines()
    assert code == 0 and all(len(line) <= 80 for line in lines), text
    heads = [c.strip() for c in lines[0].split("|")]
    at = heads.index("owner")
    rows = lines[table_rule(lines) + 1:]
    cells = [row.split("|")[at].strip() for row in rows if "|" in row]
    assert "\u2026" not in "".join(cells), text
    assert owner in "".join(cells), text  # its pieces, in order, on the row's lines


@pytest.mark.parametrize("args", [["create", ""], ["create", "team/mnist"],
                                  ["describe", "team/mnist"], ["list-versions", " "],
                                  ["register-version", "a/b",
                                   "4f9a1c2e-1111-2222-3333-444455556666"]])
def test_a_model_name_no_route_can_carry_is_named_as_a_usage_error(master, tmp_path, args):
    """An empty model name or one with '/' is refused by name, as a template's is (it was
    "POST .../models/ was answered with a redirect" or "No API route POST ...")."""
    out = run_det(["-m", master.url, "model", *args],
                  env={"DET_AUTH_DIR": str(tmp_path / "auth")})
    assert out.returncode == 2, out.stderr
    assert out.stderr == ("det: error: Expected a model name of 1-255 characters without "
                          f"'/'. Received: {args[1]!r}\n"), out.stderr


def test_an_argparse_error_folds_at_the_terminal_width():
    """argparse's own errors (a required flag missing) fold at the terminal's width as
    det's other errors: it printed one 130-column line for link-with-agent-user."""
    code, text = run_det_in_terminal(["-m", "http://127.0.0.1:9", "user",
                                      "link-with-agent-user", "someone"], columns=80,
                                     timeout=120.0)
    lines = text.strip().splitlines()
    assert code == 2 and all(len(line) <= 80 for line in lines), text
    at = next(i for i, line in enumerate(lines) if ": error: " in line)
    assert lines[at].startswith("det user link-with-agent-user: error: the following "), text
    assert " ".join(line.strip() for line in lines[at:]).endswith(
        "required: --agent-uid, --agent-gid, --agent-user, --agent-group"), text
    assert all(line.startswith("  ") for line in lines[at + 1:]), text


def test_a_field_check_reads_as_written_without_pydantic_s_prefix(master, tmp_path):
    """A request field's own check says what it expected, not "Value error, Expected"
    (asked directly: ``det`` checks a checkpoint's UUID itself before asking)."""
    from determined.common.api import MasterClient
    from determined.errors import DeterminedError

    env = {"DET_AUTH_DIR": str(tmp_path / "auth")}
    assert run_det(["-m", master.url, "model", "create", "checked"], env=env).returncode == 0
    with MasterClient(master.url) as c, pytest.raises(DeterminedError) as refused:
        c.request("POST", "/models/checked/versions", json={"checkpoint_uuid": "not-a-uuid"})
    assert str(refused.value).splitlines()[1] == (
        "  - checkpoint_uuid: Expected a checkpoint id in UUID form "
        "(xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx). Received: 'not-a-uuid'"), refused.value


@pytest.mark.parametrize("user,target,said", [
    ("admin", "nobody-by-that-name", "user 'nobody-by-that-name' not found"),
    ("determined", "admin", "Only an admin can change the password of 'admin'")])
def test_change_password_is_refused_before_asking_for_the_new_one(master, tmp_path, user,
                                                                  target, said):
    """A user not there, or not yours to change, is said before the two password prompts
    (they were asked, then the master refused)."""
    code, text = run_det_in_terminal(
        ["-m", master.url, "-u", user, "user", "change-password", target],
        env={"DET_AUTH_DIR": str(tmp_path / "auth")}, timeout=60.0,
        answer=("New password", "a-new-one\n"), idle=5, respond=lambda out: None)
    assert code == 1 and "New password" not in text, text
    assert said in " ".join(text.split()), text


def test_a_password_typed_at_a_prompt_and_refused_says_what_to_check(master, tmp_path):
    """``det -u NAME ...`` asks for NAME's password; refused, it says which login failed
    and what to check, as ``det user login`` does (it said only "Invalid username or
    password")."""
    code, text = run_det_in_terminal(
        ["-m", master.url, "-u", "no-such-user", "e", "list"],
        env={"DET_AUTH_DIR": str(tmp_path / "auth")}, timeout=60.0,
        answer=("Password for user 'no-such-user'", "guess\n"), idle=5,
        respond=lambda out: None)
    said = " ".join(text.split())
    assert code == 1, text
    assert f"Could not log in to {master.url} as 'no-such-user'" in said, text
    assert "`det user list` lists users" in said, text


@pytest.mark.parametrize("args", [
    ["checkpoint", "download", "8e3ecb3f-bd15-4494-bcfe-20518d737f5f"],
    ["experiment", "download", "2"], ["trial", "download", "2", "--latest"]])
def test_a_download_into_a_file_is_a_usage_error_naming_it(tmp_path, args):
    """``-o`` naming a file (or a path under one) is refused by name before anything is
    fetched; ``det checkpoint download -o FILE`` printed "FileExistsError: [Errno 17]"."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    for target, said in ((a_file, "a file"), (a_file / "sub", f"{str(a_file)!r} is a file")):
        out = run_det(["-m", "http://127.0.0.1:9", *args, "-o", target])
        assert out.returncode == 2, out.stderr
        assert out.stderr.splitlines()[-1].endswith(
            f"error: argument -o/--output-dir: Expected a directory (or one to create). "
            f"Received: {str(target)!r}, {said}"), out.stderr
    assert a_file.read_text() == "mine\n"


def test_names_with_question_marks_reach_their_own_template_and_user(master, tmp_path):
    """A '?' or '#' in a template's or user's name is part of the name: ``det template
    set 'a?b'`` stored a template 'a' (the rest went as a query), and ``det user
    deactivate 'q?x'`` looked for a user 'q'."""
    env = {"DET_AUTH_DIR": str(tmp_path / "auth")}
    config = tmp_path / "t.yaml"
    config.write_text("description: from a template\n")

    def det(*args, code=0):
        out = run_det(["-m", master.url, *args], env=env)
        assert out.returncode == code, (args, out.stdout, out.stderr)
        return out.stdout

    det("template", "set", "a?b#c", config)
    assert "description: from a template" in det("template", "describe", "a?b#c")
    assert "a?b#c" in [row["name"] for row in json.loads(det("template", "list", "--json"))]
    det("template", "describe", "a", code=1)  # no template 'a' was made
    det("template", "rm", "a?b#c")
    det("-u", "admin", "user", "create", "q?x")
    det("-u", "admin", "user", "deactivate", "q?x")
    users = {u["username"]: u for u in json.loads(det("user", "list", "--json"))}
    assert users["q?x"]["active"] is False, users
    det("-u", "admin", "user", "change-password", "q?x", "--password", "pw")
