"""The Python copy of the log view's path mapping (its search) shows lines as the web UI
does: both are checked on the same cases (the vitest reads the same file)."""

import json
from pathlib import Path

import pytest

from determined.common.log_view import shown_line

CASES = json.loads((Path(__file__).parents[2] / "fixtures" / "log_view_lines.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_lines_show_as_the_web_ui_shows_them(case):
    assert shown_line(case["raw"]) == case["shown"]
