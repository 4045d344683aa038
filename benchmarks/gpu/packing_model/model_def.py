"""The packing benchmark's trial: a small MLP on a fixed synthetic 10-class task (inputs
from a Gaussian, labels from a random teacher network), small enough that one trial
leaves a modern GPU mostly idle. Hyperparameters: ``lr``, ``momentum``, ``hidden``."""

import torch
from torch import nn

from determined import pytorch

INPUTS, CLASSES, TRAIN, VALIDATION = 128, 10, 16384, 4096


def make_data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(TRAIN + VALIDATION, INPUTS, generator=g)
    teacher = nn.Sequential(nn.Linear(INPUTS, 256), nn.Tanh(), nn.Linear(256, CLASSES))
    for p in teacher.parameters():
        p.data = torch.randn(p.shape, generator=g) / p.shape[-1] ** 0.5
    with torch.no_grad():
        y = teacher(x).argmax(1)
    return x, y


class PackTrial(pytorch.PyTorchTrial):
    def __init__(self, context):
        self.context = context
        hp = context.get_hparams()
        hidden = int(hp["hidden"])
        self.model = context.wrap_model(nn.Sequential(
            nn.Linear(INPUTS, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, CLASSES)))
        self.opt = context.wrap_optimizer(torch.optim.SGD(
            self.model.parameters(), lr=hp["lr"], momentum=hp["momentum"]))
        self.x, self.y = make_data()

    def build_training_data_loader(self):
        ds = torch.utils.data.TensorDataset(self.x[:TRAIN], self.y[:TRAIN])
        return pytorch.DataLoader(ds, batch_size=self.context.get_per_slot_batch_size(),
                                  shuffle=True)

    def build_validation_data_loader(self):
        ds = torch.utils.data.TensorDataset(self.x[TRAIN:], self.y[TRAIN:])
        return pytorch.DataLoader(ds, batch_size=1024)

    def train_batch(self, batch, epoch_idx, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        return {"loss": loss}

    def evaluate_batch(self, batch):
        x, y = batch
        logits = self.model(x)
        return {"validation_error": (logits.argmax(1) != y).float().mean()}
