"""A NaN searcher metric is never the best validation, whichever way the metric sorts:
with ``checkpoint_policy: best`` and ``smaller_is_better: false`` no checkpoint is
written for it (it was once read as +inf, which counted as the best)."""

import json
from pathlib import Path

from det_cli_testing import run_det

FIXTURE = Path(__file__).parent / "nan_metric"


def test_nan_validation_is_not_best_and_not_checkpointed(tmp_path):
    local = tmp_path / "local"
    out = run_det(["e", "create", FIXTURE / "const.yaml", FIXTURE, "--local-dir", local,
                   "--json", "--no-progress"])
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["best_trial"]["best_metric"] == 1.0
    listed = run_det(["e", "list-checkpoints", "1", "--local-dir", local, "--json"])
    assert listed.returncode == 0, listed.stderr
    # Every checkpoint written, those garbage-collected since (DELETED) included.
    batches = sorted(c["total_batches"] for c in json.loads(listed.stdout))
    # Scores 1.0 (best: checkpointed), NaN (not best), 0.5 (not best), then the end of
    # the searcher's length (always checkpointed).
    assert batches == [10, 40], batches
