"""``det.experimental.create`` with partial config sections, as 0.13 took them (issue
23): every section, the searcher included, is merged over the Native defaults, so the
user's own errors are what the user sees."""

import pytest
import torch
from torch import nn

import determined as det
from determined import pytorch
from determined.errors import InvalidConfigError
from determined.experimental._native import native_raw_config


class ShapeMismatch(pytorch.PyTorchTrial):
    """Its loss gets labels of the wrong batch size: PyTorch raises ValueError."""

    def __init__(self, context):
        self.context = context
        self.model = context.wrap_model(nn.Linear(4, 2))
        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.1))

    def build_training_data_loader(self):
        ds = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.zeros(64, dtype=torch.long))
        return pytorch.DataLoader(ds, batch_size=self.context.get_per_slot_batch_size())

    def build_validation_data_loader(self):
        return self.build_training_data_loader()

    def train_batch(self, batch, epoch_idx, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.model(x), y[:3])
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        return {"loss": loss}

    def evaluate_batch(self, batch):
        return {"validation_loss": 0.0}


def test_the_users_framework_error_reaches_the_user(tmp_path):
    config = {"searcher": {"max_length": {"batches": 1}},
              "hyperparameters": {"global_batch_size": 8}}
    with pytest.raises(Exception) as raised:
        det.experimental.create(ShapeMismatch, config, local=True, test=True,
                                context_dir=str(tmp_path))
    assert not isinstance(raised.value, InvalidConfigError), raised.value
    text = str(raised.value)
    assert "ShapeMismatch.train_batch raised ValueError" in text and "batch_size" in text


def test_partial_sections_merge_over_the_native_defaults():
    cfg = native_raw_config({"searcher": {"max_length": {"epochs": 2}, "metric": "acc"},
                             "resources": {"max_slots": 4}}, "validation_loss")
    assert cfg["searcher"] == {"name": "single", "max_length": {"epochs": 2}, "metric": "acc"}
    assert cfg["resources"] == {"slots_per_trial": 1, "max_slots": 4}
    named = native_raw_config({"searcher": {"name": "random", "max_trials": 3}}, "loss")
    assert named["searcher"] == {"name": "random", "max_trials": 3, "metric": "loss",
                                 "max_length": {"batches": 100}}
    pbt = native_raw_config({"searcher": {"name": "pbt", "length_per_round": {"batches": 5}}},
                            "loss")["searcher"]
    assert "max_length" not in pbt and pbt["length_per_round"] == {"batches": 5}


class NoValidationLoss(ShapeMismatch):
    """Trains; its validation metric is ``vloss``, not the default ``validation_loss``."""

    def train_batch(self, batch, epoch_idx, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        return {"loss": loss}

    def evaluate_batch(self, batch):
        return {"vloss": 0.5}


def test_a_default_metric_the_trial_lacks_is_said_in_the_users_terms(tmp_path, caplog):
    """No metric in the config: the local test warns, once, that validation_loss was
    assumed, and never names it as though the config had."""
    config = {"searcher": {"max_length": {"batches": 1}},
              "hyperparameters": {"global_batch_size": 8}}
    with caplog.at_level("WARNING", logger="determined"):
        det.experimental.create(NoValidationLoss, config, local=True, test=True,
                                context_dir=str(tmp_path))
    said = [r.getMessage() for r in caplog.records if "searcher metric" in r.getMessage()]
    assert said == ["the config's searcher section sets no metric, so the searcher metric is "
                    "assumed to be validation_loss (the default); the validation metrics lack "
                    "it (received: vloss)"], said
    without = {"hyperparameters": {"global_batch_size": 8}}
    assert native_raw_config(without, "loss")["internal"] == {"searcher_as_written": None}
