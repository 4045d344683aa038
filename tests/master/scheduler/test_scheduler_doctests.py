"""The examples in the scheduler's docstrings run and give what they show."""

import doctest
import importlib

import pytest

MODULES = [
    "determined.master.scheduler",
    "determined.master.scheduler._fair_share",
    "determined.master.scheduler._max_min",
    "determined.master.scheduler._pool",
    "determined.master.scheduler._preempt",
    "determined.master.scheduler._priority",
    "determined.master.scheduler._schedule",
    "determined.master.scheduler._state",
    "determined.master.scheduler._types",
    "determined.master.scheduler._waiting",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


def test_importing_the_scheduler_loads_no_framework():
    import subprocess
    import sys

    code = "import sys, determined.master.scheduler; print(any(m in sys.modules for m in ('torch', 'tensorflow')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
