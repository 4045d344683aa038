"""A master's "KIND KEY not found" (HTTP 404) says, in det, which command lists what
exists; the master's own message (the web UI shows it as it is) is unchanged."""

import httpx
import pytest

from det_cli_testing import run_det, run_det_in_terminal

pytestmark = pytest.mark.e2e

UNKNOWN_UUID = "00000000-0000-0000-0000-000000000000"

#: det's arguments naming something that is not there -> the message, then the hint.
CASES = {
    ("model", "describe", "nope"): ("model 'nope' not found (HTTP 404)", "det model list"),
    ("e", "describe", "99"): ("experiment 99 not found (HTTP 404)",
                              "det experiment list --all"),
    ("t", "describe", "99"): ("trial 99 not found (HTTP 404)",
                              "det experiment list-trials EXPERIMENT_ID"),
    ("c", "describe", UNKNOWN_UUID): (f"checkpoint '{UNKNOWN_UUID}' not found (HTTP 404)",
                                      "det experiment list-checkpoints EXPERIMENT_ID"),
    ("template", "describe", "nope"): ("template 'nope' not found (HTTP 404)",
                                       "det template list"),
    ("cmd", "logs", "nope"): ("task 'nope' not found (HTTP 404)", "det task list"),
    ("-u", "admin", "user", "deactivate", "nope"): ("user 'nope' not found (HTTP 404)",
                                                    "det user list"),
    ("-u", "admin", "agent", "disable", "nope"): ("agent 'nope' not found (HTTP 404)",
                                                  "det agent list"),
}


@pytest.mark.parametrize("args", sorted(CASES), ids=" ".join)
def test_not_found_names_the_list_command(shared_master, args):
    message, command = CASES[args]
    out = run_det(args, env={"DET_MASTER": shared_master.url}, timeout=60)
    assert out.returncode == 1 and out.stdout == "", out
    assert out.stderr.startswith(f"det: error: {message}; run `{command}` to see "), out
    assert out.stderr.count("\n") == 1, out.stderr  # one line on a pipe


def test_the_master_message_is_unchanged_and_the_hint_folds_at_80(shared_master):
    # The web UI shows the master's message as it is: no det command in it.
    r = httpx.get(shared_master.url + "/api/v1/models/nope")
    assert r.status_code == 404 and r.json()["error"] == "model 'nope' not found", r.text
    code, text = run_det_in_terminal(["e", "describe", "99"], columns=80, timeout=60,
                                     env={"DET_MASTER": shared_master.url})
    assert code == 1, text
    lines = text.strip().splitlines()
    assert lines[0].startswith("det: error: experiment 99 not found (HTTP 404); run"), text
    assert all(len(line) <= 80 for line in lines) and len(lines) == 2, text
    assert " ".join(line.strip() for line in lines).endswith(
        "run `det experiment list --all` to see experiments"), text


def test_other_errors_get_no_hint(shared_master):
    out = run_det(["user", "deactivate", "nope"], env={"DET_MASTER": shared_master.url},
                  timeout=60)  # not an admin: refused (403) before looking the user up
    assert out.returncode == 1 and "(HTTP 403)" in out.stderr, out
    assert "to see" not in out.stderr, out.stderr
