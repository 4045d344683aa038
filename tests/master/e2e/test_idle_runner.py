"""An idle trial (its op done, the searcher has no next one yet) costs the master nothing:
its runner's long poll sleeps until its experiment changes (issue 14 part 3).

Before, an empty next-op woke every runner, the asking one included, which polled
again at once: one busy loop per idle trial in the master.
"""

import os
import time

import pytest

from master_testing import create_experiment, wait_for_state, wait_until

pytestmark = pytest.mark.e2e

UNEVEN_TRIAL = '''"""TinyTrial whose even trial ids sleep per batch: the odd one waits idle at a rung."""
import time

from model_def import TinyTrial


class UnevenTrial(TinyTrial):
    def train_batch(self, batch, epoch_idx, batch_idx):
        if self.context.get_trial_id() % 2 == 0:
            time.sleep(1.0)
        return super().train_batch(batch, epoch_idx, batch_idx)
'''


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_an_idle_trial_does_not_keep_the_master_busy(master_factory, tiny_dir, tmp_path):
    import shutil

    model_dir = tmp_path / "uneven"
    shutil.copytree(str(tiny_dir), str(model_dir),
                    ignore=shutil.ignore_patterns("__pycache__"))
    (model_dir / "uneven_def.py").write_text(UNEVEN_TRIAL)
    config = {
        "entrypoint": "uneven_def:UnevenTrial", "scheduling_unit": 5,
        "hyperparameters": {"global_batch_size": 16, "dropout": 0.2, "lr": 0.1},
        "searcher": {"name": "adaptive_asha", "metric": "validation_loss", "max_trials": 2,
                     "max_length": {"batches": 40}, "divisor": 2, "max_rungs": 2,
                     "max_concurrent_trials": 2, "mode": "aggressive"},
    }
    master = master_factory(slots=2)
    with master.client() as api:
        exp = create_experiment(api, config, model_dir)

        def one_idle():
            trials = api.get(f"/experiments/{exp}/trials").json()["trials"]
            if len(trials) != 2:
                return None
            fast = next(t for t in trials if t["id"] % 2 == 1)
            slow = next(t for t in trials if t["id"] % 2 == 0)
            # The fast one finished its first rung; the slow one is far from it.
            if fast["total_batches"] >= 20 and slow["total_batches"] <= 5:
                return fast
            return None

        fast = wait_until(one_idle, 120, "the fast trial to wait at its first rung")
        time.sleep(0.5)  # its last report and validation answered
        before, start = _cpu_seconds(master.proc.pid), time.monotonic()
        time.sleep(3.0)
        share = (_cpu_seconds(master.proc.pid) - before) / (time.monotonic() - start)
        trials = api.get(f"/experiments/{exp}/trials").json()["trials"]
        slow = next(t for t in trials if t["id"] % 2 == 0)
        assert slow["total_batches"] < 20, "the window measured was not an idle one"
        logs = [line["line"] for line in api.get(f"/trials/{fast['id']}/logs").json()["logs"]]
        assert not any("exited" in line for line in logs), "the idle trial's runner left"
        # One busy-polling runner kept a core nearly busy; the slow trial's reports
        # every 5 batches (5 s) cost a few milliseconds.
        assert share < 0.25, f"the master used {share:.0%} of a core while trial " \
                             f"{fast['id']} waited idle"
        done = wait_for_state(api, exp, ["COMPLETED", "ERROR", "CANCELED"], timeout=180)
        assert done["state"] == "COMPLETED", done
