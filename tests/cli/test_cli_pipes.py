"""Scripts parse the CLI (issue 23): when stdout is no terminal every table column is
printed in full (no hidden columns, no shortened cells), and a reader that closes the
pipe early ends the command quietly."""

import json
import pathlib
import subprocess
import sys

import pytest
import yaml

from det_cli_testing import run_det

pytestmark = pytest.mark.timeout(600)

TINY = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tiny_pytorch"
LONG = "a description long enough that an 80-column table would have to shorten it " * 2


@pytest.fixture(scope="module")
def local_run(tmp_path_factory, request):
    tmp = tmp_path_factory.mktemp("pipes")
    cfg = yaml.safe_load((TINY / "const.yaml").read_text())
    cfg.update(description=LONG, labels=["first-label", "needle-label"])
    cfg["searcher"]["max_length"] = {"batches": 20}
    (tmp / "c.yaml").write_text(yaml.safe_dump(cfg))
    out = run_det(["e", "create", tmp / "c.yaml", TINY, "--local-dir",
                   tmp / "local", "--json", "--no-progress"])
    assert out.returncode == 0, out.stderr
    return tmp / "local", json.loads(out.stdout)


def test_piped_tables_show_every_column_in_full(local_run, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    local, result = local_run
    trial_id = str(result["trials"][0]["trial_id"])
    commands = [["e", "list"], ["e", "describe", "1"], ["e", "describe", "1", "--metrics"],
                ["e", "list-trials", "1"], ["e", "list-checkpoints", "1"],
                ["t", "describe", trial_id], ["t", "describe", trial_id, "--metrics"],
                ["checkpoint", "list", "1"]]
    for args in commands:
        out = run_det([*args, "--local-dir", local])
        assert out.returncode == 0, (args, out.stderr)
        assert "(hidden:" not in out.stdout and "\u2026" not in out.stdout, (args, out.stdout)
    described = run_det(["e", "describe", "1", "--local-dir", local]).stdout
    assert "needle-label" in described and LONG.strip() in described
    listing = run_det(["e", "list", "--local-dir", local]).stdout
    header = listing.splitlines()[0].split(" | ")
    assert [h.strip() for h in header][-3:] == ["labels", "started", "ended"], header
    assert "needle-label" in listing
    # $COLUMNS still asks for a width (a terminal's habits on purpose).
    narrow = run_det(["e", "list", "--local-dir", local], env={"COLUMNS": "80"}).stdout
    assert all(len(line) <= 80 for line in narrow.splitlines()) and "(hidden:" in narrow


def test_a_closed_pipe_ends_the_command_quietly(local_run):
    local, _ = local_run
    for args in (["e", "describe", "1", "--metrics"], ["e", "describe", "1", "--json"]):
        proc = subprocess.Popen([sys.executable, "-m", "determined.cli", *args, "--local-dir",
                                 str(local)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.close()  # as `| head` does once it has read enough: before any write
        stderr = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 141, stderr
        assert stderr == "", stderr


def test_table_text_has_no_limit_when_stdout_is_no_terminal(monkeypatch):
    from determined.cli._remote import table_text, terminal_width

    monkeypatch.delenv("COLUMNS", raising=False)
    assert terminal_width() is None  # pytest captures stdout: no terminal
    rows = [{"id": 1, "description": LONG, "labels": "x" * 200}]
    text = table_text(rows, ["id", "labels", "description"])
    assert LONG.strip() in text and "x" * 200 in text
