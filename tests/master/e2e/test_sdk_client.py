"""The Python SDK against a real master: experiments, trials, top checkpoints, loading."""

import os

import pytest
import torch
import yaml

from determined.errors import MasterError
from determined.experimental import Determined


def test_sdk_selects_and_loads_checkpoints(master_factory, tiny_dir, tmp_path):
    master = master_factory(slots=2)
    with open(tiny_dir / "const.yaml") as f:
        config = yaml.safe_load(f)
    config["hyperparameters"]["lr"] = {"type": "categorical", "vals": [0.01, 0.3]}
    config["searcher"] = {"name": "grid", "metric": "validation_loss",
                          "max_length": {"batches": 20}}
    d = Determined(master.url)
    exp = d.create_experiment(config, str(tiny_dir))
    assert exp.wait(interval=0.3, timeout=120) == "COMPLETED"

    trials = exp.get_trials()
    assert len(trials) == 2
    top = exp.top_checkpoint()
    best_two = exp.top_n_checkpoints(2)
    assert [c.uuid for c in best_two][0] == top.uuid and len(best_two) == 2
    first, second = (c.validation["metrics"]["validationMetrics"] for c in best_two)
    assert first["validation_loss"] <= second["validation_loss"]
    worst_first = exp.top_n_checkpoints(2, smaller_is_better=False)
    assert worst_first[0].uuid == best_two[1].uuid

    trial = d.get_trial(top.trial_id)
    assert trial.top_checkpoint().uuid == top.uuid
    latest = trial.select_checkpoint(latest=True)
    assert latest.batch_number == 20
    assert trial.select_checkpoint(uuid=top.uuid).uuid == top.uuid
    with pytest.raises(ValueError, match="exactly one"):
        trial.select_checkpoint(latest=True, best=True)

    path = top.download(str(tmp_path / "dl"))
    assert os.path.exists(os.path.join(path, "state_dict.pth"))
    loaded = top.load()
    saved = torch.load(os.path.join(path, "state_dict.pth"), weights_only=False)
    assert torch.equal(loaded.context.models[0].state_dict()["0.weight"],
                       saved["models_state_dict"][0]["0.weight"])
    assert d.get_checkpoint(top.uuid).trial_id == top.trial_id

    # Upstream's shapes: references from the master's URL, checkpoints from its JSON.
    from determined.experimental import Checkpoint, ExperimentReference, TrialReference

    assert top.hparams["lr"] in (0.01, 0.3) and top.experiment_config["searcher"]["name"] == "grid"
    assert top.experiment_id == exp.id and top.resources and top.batch_number == 20
    by_url = ExperimentReference(exp.id, master.url)
    assert by_url.top_checkpoint().uuid == top.uuid
    trial_by_url = TrialReference(top.trial_id, master.url)
    assert trial_by_url.experiment_id == exp.id
    assert trial_by_url.select_checkpoint(latest=True).uuid == latest.uuid
    data = d._client.get_checkpoint(top.uuid)
    raw = Checkpoint.from_json({**data, "experiment_config": config}, master.url)
    raw.add_metadata({"source": "from_json"})
    assert d.get_checkpoint(top.uuid).metadata == {"source": "from_json"}
    raw.remove_metadata(["source"])
    assert d.get_checkpoint(top.uuid).metadata == {}
    fetched = raw.download(str(tmp_path / "raw"))
    assert os.path.exists(os.path.join(fetched, "state_dict.pth"))
    with pytest.raises(TypeError, match="master's URL"):
        ExperimentReference(exp.id, 8080)
    # What a REPL shows (was "<...ExperimentReference object at 0x...>").
    assert repr(by_url) == f"ExperimentReference(id={exp.id}, master={master.url!r})"
    assert repr(trial_by_url) == f"TrialReference(id={top.trial_id}, master={master.url!r})"


def test_sdk_errors(master_factory):
    master = master_factory(slots=1)
    d = Determined(master.url)
    with pytest.raises(MasterError, match="404|not found|No experiment"):
        d.get_experiment(999)
    with pytest.raises(MasterError):
        d.get_checkpoint("no-such-uuid")
