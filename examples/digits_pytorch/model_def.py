"""A digits classifier in the PyTorchTrial context style (Determined 0.13)."""

import torch
from torch import nn

import determined as det
from determined import pytorch
from data import digits_datasets


class DigitsTrial(pytorch.PyTorchTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context
        hidden = context.get_hparam("hidden_size")
        model = nn.Sequential(
            nn.Linear(64, hidden),
            nn.ReLU(),
            nn.Dropout(context.get_hparam("dropout")),
            nn.Linear(hidden, 10),
        )
        self.model = context.wrap_model(model)
        self.optimizer = context.wrap_optimizer(
            torch.optim.SGD(
                self.model.parameters(),
                lr=context.get_hparam("learning_rate"),
                momentum=context.get_hparam("momentum"),
            )
        )
        self.scheduler = context.wrap_lr_scheduler(
            torch.optim.lr_scheduler.StepLR(self.optimizer, step_size=10, gamma=0.8),
            step_mode=pytorch.LRScheduler.StepMode.STEP_EVERY_EPOCH,
        )
        self.train_set, self.val_set = digits_datasets()

    def build_training_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(
            self.train_set, batch_size=self.context.get_per_slot_batch_size(), shuffle=True
        )

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(self.val_set, batch_size=self.context.get_per_slot_batch_size())

    def train_batch(self, batch, epoch_idx: int, batch_idx: int):
        x, y = batch
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer)
        return {"loss": loss}

    def evaluate_batch(self, batch):
        x, y = batch
        logits = self.model(x)
        accuracy = (logits.argmax(dim=1) == y).float().mean()
        return {
            "validation_loss": nn.functional.cross_entropy(logits, y),
            "accuracy": accuracy,
            "validation_error": 1.0 - accuracy,
        }
