"""Tables at 80 columns name their columns in words (``exit code``, ``agent``,
``created``), in their headers and in the ``(hidden: ...)`` line alike; CSV and JSON
keep the field names (``exit_code``, ``agent_id``, ``creation_time``)."""

import pytest

from det_cli_testing import hidden_names, run_det, run_det_in_terminal, table_headers

pytestmark = pytest.mark.e2e

#: Field names that a table shows in words.
FIELDS = {"agent_id", "slot_id", "exit_code", "end_reason", "creation_time",
          "last_updated_time", "end_time", "start_time"}


@pytest.mark.parametrize("args,words,machine", [
    (["task", "list"], {"exit code", "end reason"}, "--csv"),
    (["slot", "list"], {"agent", "slot"}, "--csv"),
    (["model", "list"], {"created", "updated"}, "--json"),
])
def test_headers_and_hidden_columns_in_words(shared_master, args, words, machine):
    env = {"DET_MASTER": shared_master.url}
    made = run_det(["model", "create", "headers-net"], env=env, timeout=60)
    assert made.returncode == 0 or "already" in made.stderr, made
    code, text = run_det_in_terminal(args, columns=80, env=env, timeout=60)
    assert code == 0, text
    lines = text.strip("\n").splitlines()
    named = set(table_headers(lines)) | set(hidden_names(lines))
    assert words <= named, text
    assert not named & FIELDS, text
    assert all(len(line) <= 80 for line in lines), text
    out = run_det([*args, machine], env=env, timeout=60)
    assert out.returncode == 0, out
    assert any(f in out.stdout for f in FIELDS), out.stdout  # field names


def test_an_empty_experiment_list_says_what_all_shows(shared_master):
    env = {"DET_MASTER": shared_master.url}
    code, text = run_det_in_terminal(["e", "list"], columns=80, env=env, timeout=60)
    assert code == 0, text
    lines = text.strip("\n").splitlines()
    assert lines[-1] == ("(no unarchived experiments of yours; `det experiment list --all` "
                         "shows all)"), text
    assert all(len(line) <= 80 for line in lines), text
    piped = run_det(["e", "list"], env=env, timeout=60)  # a script's: the table alone
    assert piped.returncode == 0 and "--all" not in piped.stdout + piped.stderr, piped
