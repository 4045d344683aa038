"""The same digits classifier in the legacy PyTorchTrial style (seed 003, Determined <= 0.12).

The platform runs backward and the optimizer step; train_batch returns the loss.
"""

import torch
from torch import nn

from determined import pytorch
from data import digits_datasets


class DigitsLegacyTrial(pytorch.PyTorchTrial):
    def __init__(self, trial_context: pytorch.PyTorchTrialContext) -> None:
        self.context = trial_context
        self.train_set, self.val_set = digits_datasets()

    def build_model(self) -> nn.Module:
        hidden = self.context.get_hparam("hidden_size")
        return nn.Sequential(
            nn.Linear(64, hidden),
            nn.ReLU(),
            nn.Dropout(self.context.get_hparam("dropout")),
            nn.Linear(hidden, 10),
        )

    def optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        return torch.optim.SGD(
            model.parameters(),
            lr=self.context.get_hparam("learning_rate"),
            momentum=self.context.get_hparam("momentum"),
        )

    def create_lr_scheduler(self, optimizer):
        return pytorch.LRScheduler(
            torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.8),
            step_mode=pytorch.LRScheduler.StepMode.STEP_EVERY_EPOCH,
        )

    def build_training_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(
            self.train_set, batch_size=self.context.get_per_slot_batch_size(), shuffle=True
        )

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(self.val_set, batch_size=self.context.get_per_slot_batch_size())

    def train_batch(self, batch, model: nn.Module, epoch_idx: int, batch_idx: int):
        x, y = batch
        return {"loss": nn.functional.cross_entropy(model(x), y)}

    def evaluate_batch(self, batch, model: nn.Module):
        x, y = batch
        logits = model(x)
        accuracy = (logits.argmax(dim=1) == y).float().mean()
        return {"validation_loss": nn.functional.cross_entropy(logits, y), "accuracy": accuracy,
                "validation_error": 1.0 - accuracy}
