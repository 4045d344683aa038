"""The benchmark's trial: an MLP on synthetic data, written as users write trials."""

import torch
from torch import nn

from determined import pytorch

from _workloads import make_dataset, make_model  # noqa: F401 (run.py imports them here)


class MLPTrial(pytorch.PyTorchTrial):
    def __init__(self, context):
        self.context = context
        sizes = context.get_hparam("sizes")
        self.model = context.wrap_model(make_model(sizes))
        self.opt = context.wrap_optimizer(
            torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9))
        self.data = make_dataset(sizes, context.get_per_slot_batch_size(), context.get_hparam("batches"))
        self.loss_fn = nn.CrossEntropyLoss()

    def build_training_data_loader(self):
        return pytorch.DataLoader(self.data, batch_size=self.context.get_per_slot_batch_size(),
                                  shuffle=True)

    def build_validation_data_loader(self):
        return pytorch.DataLoader(self.data, batch_size=self.context.get_per_slot_batch_size())

    def train_batch(self, batch, epoch_idx, batch_idx):
        x, y = batch
        loss = self.loss_fn(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        return {"loss": loss}

    def evaluate_batch(self, batch):
        x, y = batch
        return {"loss": self.loss_fn(self.model(x), y)}
