"""Which local directory a trial process writes event files to: its own, whatever the
process that started it chose for its own trials.

CI failed once because a test process that had run a trial in-process passed its
chosen directory down (by environment) to every master it started later: their trials
all wrote into that one directory and synced each other's files, so a TensorBoard over
a later experiment found one run instead of two.
"""

import json
import os
import subprocess
import sys
import types

import pytest

from determined.tensorboard import _paths

CHILD = """
import json, os, types
from determined.tensorboard import _paths
env = types.SimpleNamespace(experiment_id=7, trial_id=9)
path = _paths.prepare_base_path(env)
print(json.dumps({"path": path, "created_here": _paths.created_here, "pid": os.getpid()}))
"""


@pytest.fixture
def clean_env(monkeypatch):
    monkeypatch.delenv(_paths.ENV_VAR, raising=False)
    monkeypatch.delenv(_paths._OWNER_VAR, raising=False)
    monkeypatch.setattr(_paths, "_chosen_here", None)
    monkeypatch.setattr(_paths, "created_here", False)


def _child(env=None):
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         env=env, check=True, timeout=120)
    return json.loads(out.stdout)


def test_a_child_chooses_its_own_dir_after_the_parent_chose_one(clean_env):
    parent = _paths.prepare_base_path(types.SimpleNamespace(experiment_id=1, trial_id=2))
    assert _paths.created_here and os.environ[_paths.ENV_VAR] == parent
    child = _child(dict(os.environ))
    assert child["path"] != parent
    assert child["path"].endswith(f"exp-7-trial-9-{child['pid']}")
    assert child["created_here"]  # so the child removes it once synced


def test_the_platforms_dir_is_kept(clean_env, tmp_path):
    _paths.prepare_base_path(types.SimpleNamespace(experiment_id=1, trial_id=2))
    env = dict(os.environ)
    # A launcher chose the directory (as local runs do): inherited, and kept.
    env[_paths.ENV_VAR] = str(tmp_path / "platform")
    env.pop(_paths._OWNER_VAR)
    child = _child(env)
    assert child["path"] == str(tmp_path / "platform") and not child["created_here"]


def test_set_platform_dir_marks_the_choice_as_the_platforms(clean_env, tmp_path):
    _paths.prepare_base_path(types.SimpleNamespace(experiment_id=1, trial_id=2))
    _paths.set_platform_dir(str(tmp_path / "chosen"))
    child = _child(dict(os.environ))
    assert child["path"] == str(tmp_path / "chosen") and not child["created_here"]
