"""scripts/build-webui.sh prints only what needs a reader: not npm's "added N packages"
summary, but npm's errors (and the build's). Run on a copy of webui/ with a stand-in
``npm`` first on PATH that writes as npm does: its summary to stdout, its log to stderr."""

import os
import pathlib
import shutil
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent

FAKE_NPM = """#!/bin/sh
case "$1" in
  ci)
    echo "added 159 packages in 13s"
    if [ -n "$FAKE_NPM_FAIL" ]; then echo "npm error code ECONNREFUSED" >&2; exit 1; fi
    mkdir -p node_modules ;;
  run)
    mkdir -p ../src/determined/master/webui/static
    echo '<div id="root"></div>' > ../src/determined/master/webui/static/index.html ;;
esac
"""


def _checkout(tmp_path: pathlib.Path) -> pathlib.Path:
    """scripts/build-webui.sh and webui/ (without node_modules) under ``tmp_path``."""
    (tmp_path / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "build-webui.sh", tmp_path / "scripts")
    shutil.copytree(ROOT / "webui", tmp_path / "webui",
                    ignore=shutil.ignore_patterns("node_modules", ".build-stamp"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM)
    (bin_dir / "npm").chmod(0o755)
    return bin_dir


def _build(tmp_path: pathlib.Path, bin_dir: pathlib.Path, **env: str):
    return subprocess.run(
        ["bash", str(tmp_path / "scripts" / "build-webui.sh")], capture_output=True, text=True,
        timeout=120, env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", **env})


def test_npm_ci_summary_is_not_printed(tmp_path):
    bin_dir = _checkout(tmp_path)
    out = _build(tmp_path, bin_dir)
    assert out.returncode == 0, out.stderr
    assert "added" not in out.stdout + out.stderr, (out.stdout, out.stderr)
    assert (tmp_path / "src/determined/master/webui/static/index.html").exists()
    assert (tmp_path / "webui/node_modules/.lock-hash").exists()


def test_npm_errors_are_shown_and_fail_the_build(tmp_path):
    bin_dir = _checkout(tmp_path)
    out = _build(tmp_path, bin_dir, FAKE_NPM_FAIL="1")
    assert out.returncode != 0
    assert "npm error code ECONNREFUSED" in out.stderr, out.stderr
    assert not (tmp_path / "webui/node_modules/.lock-hash").exists()
