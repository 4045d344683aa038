"""Upstream's ``determined_common.api.follow_experiment_logs`` against a real master:
a trial that prints 6000 numbered lines at once has every line printed once, in order,
and the call returns the experiment's end state. (It read one page a second and lost
most of such a log.)"""

import re

import pytest
import yaml

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

LINES = 6000

_SCRIPT = f"""
import determined as det

for i in range({LINES}):
    print(f"numbered line {{i}}")
with det.core.init() as core:
    for op in core.searcher.operations():
        core.train.report_validation_metrics(op.length, {{"loss": 0.5}})
        op.report_completed(0.5)
"""


def test_follow_experiment_logs_prints_every_line_once_in_order(master_factory, tmp_path,
                                                                 capsys):
    from determined_common import api

    master = master_factory(slots=1)
    model = tmp_path / "model"
    model.mkdir()
    (model / "lines.py").write_text(_SCRIPT)
    config = {"name": "many-lines", "entrypoint": "python3 lines.py",
              "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
              "max_restarts": 0}
    exp_id = api.create_experiment(master.url, yaml.safe_dump(config), str(model))
    capsys.readouterr()

    assert api.follow_experiment_logs(master.url, exp_id) == "COMPLETED"
    out = capsys.readouterr().out
    numbers = [int(m.group(1)) for m in re.finditer(r"numbered line (\d+)$", out, re.M)]
    assert numbers == list(range(LINES)), (len(numbers), out[-2000:])

    with master.client() as c:  # what was printed is the trial's whole log
        (trial,) = c.get(f"/experiments/{exp_id}").json()["trials"]
        stored = c.get(f"/trials/{trial['id']}/logs", params={"limit": 100000}).json()["logs"]
    assert out.splitlines() == [line["line"].rstrip("\n") for line in stored]
