"""The ``det`` command line, run as a real process."""

import pytest

from det_cli_testing import run_det


def test_version_and_help():
    out = run_det(["--version"])
    assert out.returncode == 0 and "det 0.13.0" in out.stdout
    out = run_det(["--help"])
    assert "experiment" in out.stdout and "preview-search" in out.stdout


def test_without_master_explains_how_to_run_locally(tiny_dir):
    out = run_det(["-m", "localhost:1", "e", "create", tiny_dir / "const.yaml", tiny_dir])
    assert out.returncode == 1
    assert "localhost:1" in out.stderr and "--local" in out.stderr
    assert "or run the experiment on this machine with --local" in out.stderr
    # Listing: --local lists the local runs (it said "run the experiment" there too).
    out = run_det(["-m", "localhost:1", "e", "list"])
    assert out.returncode == 1
    assert out.stderr.rstrip().endswith("Start a master with `det deploy local up`, or list "
                                        "the experiments run on this machine with --local")


def test_bad_arguments_exit_2(tiny_dir):
    out = run_det(["e", "create", tiny_dir / "const.yaml"])
    assert out.returncode == 2 and "model_def" in out.stderr


def test_preview_search_shows_the_asha_plan(examples_dir):
    out = run_det(["preview-search", examples_dir / "digits_pytorch" / "adaptive.yaml"])
    assert out.returncode == 0, out.stderr
    assert "Total: 16 trials" in out.stdout
    assert "epochs" in out.stdout
    # An adaptive search's real counts depend on the metrics and their order: it says so.
    assert "its counts per length may differ" in " ".join(out.stdout.split())
    exact = run_det(["preview-search", examples_dir / "digits_pytorch" / "const.yaml"])
    assert exact.returncode == 0, exact.stderr
    assert "Total: 1 trial" in exact.stdout and "may differ" not in exact.stdout


def test_preview_search_prints_the_searcher_as_yaml_that_fits_80_columns(examples_dir):
    """0.13 printed the search configuration as YAML; a Python dict on one line ran far
    past an 80-column terminal."""
    out = run_det(["preview-search", examples_dir / "digits_pytorch" / "adaptive.yaml"],
                  env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "Using search configuration:"
    # the name first, then the fields as adaptive.yaml writes them, then the defaults
    assert lines[1:4] == ["name: adaptive_asha", "metric: validation_error",
                          "smaller_is_better: true"], lines
    assert "name: adaptive_asha" in lines and "max_trials: 16" in lines, lines
    assert "max_length:" in lines and "  epochs: 16" in lines, lines
    assert max(len(line) for line in lines) <= 80, lines
    again = run_det(["preview-search", examples_dir / "digits_pytorch" / "adaptive.yaml"],
                    env={"COLUMNS": "80"})
    assert again.stdout == out.stdout  # the same plan every time


def test_config_that_is_not_yaml_is_named_before_contacting_a_master(tiny_dir, tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("searcher: [1,\n")
    out = run_det(["-m", "localhost:1", "e", "create", bad, tiny_dir])
    assert out.returncode == 1
    assert f"Invalid config file {bad}" in out.stderr and "not valid YAML" in out.stderr
    assert "localhost:1" not in out.stderr  # failed before any request


def test_yaml_errors_give_the_position_not_the_parsers_echo(tiny_dir, tmp_path):
    """A broken YAML file is reported as line and column of the file, on a master and
    --local alike; not as the parser's dump of "<unicode string>" and its text."""
    bad = tmp_path / "broken.yaml"
    bad.write_text("description: x\nsearcher:\n  metric: [x\n")
    for where in (["-m", "localhost:1"], ["--local", "--local-dir", str(tmp_path / "runs")]):
        out = run_det(["e", "create", bad, tiny_dir, *where])
        assert out.returncode == 1, out.stderr
        assert str(bad) in out.stderr
        assert ("line 4, column 1: expected ',' or ']', but got '<stream end>' (while "
                "parsing a flow sequence from line 3, column 11)") in out.stderr, out.stderr
        assert "<unicode string>" not in out.stderr


@pytest.mark.parametrize("args, prog, option", [
    (["e", "list", "--bogus"], "det experiment list", "--bogus"),
    (["e", "create", "--nope", "x.yaml", "."], "det experiment create", "--nope"),
    (["t", "describe", "1", "--best"], "det trial describe", "--best"),
    (["model", "list", "extra"], "det model list", "extra"),
])
def test_an_unknown_option_shows_the_usage_of_the_command_given(args, prog, option):
    """``det e list --bogus`` printed ``det``'s own usage (``usage: det [-h] ...
    COMMAND ...``): it shows ``det experiment list``'s, then the error naming it."""
    out = run_det(["-m", "http://127.0.0.1:9", *args])
    assert out.returncode == 2, out
    assert out.stderr.startswith(f"usage: {prog} "), out.stderr
    assert out.stderr.rstrip().endswith(f"{prog}: error: unrecognized arguments: {option}"), \
        out.stderr
    assert "COMMAND ..." not in out.stderr, out.stderr
    top = run_det(["--bogus"])  # det's own: its usage
    assert top.returncode == 2 and top.stderr.startswith("usage: det [-h]"), top.stderr


@pytest.mark.parametrize("args, name", [
    (["checkpoint", "describe", "notauuid"], "uuid"),
    (["c", "download", "1234"], "uuid"),
    (["t", "download", "1", "--uuid", "4f9a1c2e-1111-2222-3333-44445555666"], "--uuid"),
    (["model", "register-version", "net", "latest"], "uuid"),
])
def test_a_checkpoint_uuid_is_checked_while_parsing(args, name):
    """A malformed checkpoint id is a usage error naming the argument; no master is
    asked (none listens at the address given: asking it fails otherwise)."""
    out = run_det(["-m", "http://127.0.0.1:9", *args])
    assert out.returncode == 2, out
    assert out.stderr.startswith("usage: "), out.stderr
    assert (f"error: argument {name}: Expected a checkpoint id in UUID form "
            f"(xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx). Received: {args[-1]!r}") in out.stderr
    assert "no master is reachable" not in out.stderr, out.stderr
    # A well-formed one (upper case too) is sent on: here, to the master that is not there.
    good = run_det(["-m", "http://127.0.0.1:9", *args[:-1],
                    "4F9A1C2E-1111-2222-3333-444455556666"])
    assert good.returncode == 1 and "no master is reachable" in good.stderr, good.stderr


def test_preview_search_draws_the_plain_table_of_det_s_other_listings(examples_dir):
    """It drew a box (``┏━━┳━━┓``) while every other listing is ``a | b`` over a
    ``---+---`` rule; piped and on an 80-column terminal alike."""
    from det_cli_testing import run_det_in_terminal, table_headers, table_rule

    config = examples_dir / "digits_pytorch" / "adaptive.yaml"
    piped = run_det(["preview-search", config]).stdout
    code, shown = run_det_in_terminal(["preview-search", config], columns=80)
    assert code == 0, shown
    for text in (piped, shown):
        assert not set(text) & set("┏┳┓┃┡╇┩│└┴┘━─"), text
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("trials"))
        table = lines[start:lines.index("Total: 16 trials, 49 epochs of training")]
        assert table_headers(table) == ["trials", "training (epochs)"], text
        assert table[table_rule(table)] == "-------+------------------", text
        rows = [[c.strip() for c in line.split("|")] for line in table[2:]]
        assert rows == [["9", "1"], ["6", "4"], ["1", "16"]], text
