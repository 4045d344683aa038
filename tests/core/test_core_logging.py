"""``core.init()`` in a script that configured no logging: the ``determined.*`` INFO
lines (the Core API's, the framework callbacks') reach stderr, i.e. the trial log, in
the trial's format, until the context closes; a script that configures logging keeps
its own configuration, each line printed once."""

import json
import subprocess
import sys
import textwrap

import pytest

from tests.core.core_testing import script_env

SCRIPT = textwrap.dedent("""
    import json, logging, sys
    import determined as det

    if sys.argv[1] == "before":
        logging.basicConfig(level=logging.WARNING, format="user: %(message)s")
    adapter = logging.getLogger("determined.lightning")
    with det.core.init() as outer:
        adapter.info("inside one")
        with det.core.init() as inner:
            adapter.info("inside two")
        adapter.info("inner closed")
        if sys.argv[1] == "during":
            logging.basicConfig(level=logging.INFO, format="user: %(message)s")
        adapter.warning("a warning")
        logging.getLogger("other").info("not ours")
    adapter.info("all closed")
    state = logging.getLogger("determined")
    print(json.dumps({"handlers": len(state.handlers), "level": state.level}))
""")


def _run(tmp_path, mode):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), mode],
                          env=script_env(tmp_path / "core"), cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stderr.splitlines(), json.loads(done.stdout)


def _messages(lines, prefix=None):
    """The messages of ``time LEVEL message`` lines (or of ``prefix`` lines)."""
    if prefix is not None:
        return [line[len(prefix):] for line in lines if line.startswith(prefix)]
    out = []
    for line in lines:
        parts = line.split(" ", 2)
        assert len(parts) == 3 and parts[0].count(":") == 2, line
        out.append(f"{parts[1]} {parts[2]}")
    return out


def test_unconfigured_script_shows_determined_info_lines_while_a_context_is_open(tmp_path):
    lines, state = _run(tmp_path, "none")
    messages = _messages(lines)
    core = "INFO not run by the platform: metrics go to "
    assert [m[:len(core)] if m.startswith(core) else m for m in messages] == [
        core, "INFO inside one", core, "INFO inside two", "INFO inner closed",
        "WARNING a warning"], lines
    assert state == {"handlers": 0, "level": 0}  # removed at the last close


@pytest.mark.parametrize("mode", ["before", "during"])
def test_a_script_that_configures_logging_keeps_its_configuration(tmp_path, mode):
    lines, state = _run(tmp_path, mode)
    user = _messages(lines, prefix="user: ")
    if mode == "before":  # its WARNING level holds for determined.* too
        assert lines == ["user: a warning"]
    else:  # configured inside the context: from then on its handler prints each line once
        assert user == ["a warning", "not ours", "all closed"]
        assert [m.split(" ")[0:2] for m in _messages(lines[:-3])] == [
            ["INFO", "not"], ["INFO", "inside"], ["INFO", "not"], ["INFO", "inside"],
            ["INFO", "inner"]], lines
    assert state == {"handlers": 0, "level": 0}
