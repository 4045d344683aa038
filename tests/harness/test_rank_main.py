"""The entry of a Trial class's ranks > 0 (determined.harness._rank_main), started as a
launcher starts it: it refuses a script trial, whose machines run
determined.harness._script_part instead."""

import json
import os
import subprocess
import sys

from determined.harness import TrialEnv


def test_a_script_trial_is_refused_and_the_right_module_named(tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    env = TrialEnv({"entrypoint": "python3 train.py"}, {}, str(model_dir), experiment_id=3,
                   trial_id=7)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"env": env.to_dict(), "storage": {}, "threads": 1},
                               default=str))
    run_env = dict(os.environ, DET_RANK="1", DET_SIZE="2", DET_LOCAL_RANK="1",
                   DET_LOCAL_SIZE="2", DET_NUM_AGENTS="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT="29401", DET_DIST_SPEC=str(spec))
    run_env.pop("DET_PARENT_PID", None)
    done = subprocess.run([sys.executable, "-m", "determined.harness._rank_main"],
                          env=run_env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "trial 7 runs a script" in done.stderr, done.stderr
    assert "determined.harness._script_part" in done.stderr, done.stderr
