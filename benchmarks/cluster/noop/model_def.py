"""A trial that does no real work: each batch sleeps ``batch_seconds``.

Used by the cluster benchmarks to measure what the platform itself costs. When
the hyperparameter ``first_batch_file`` is set, the wall-clock time of the first
training batch is appended to that file.
"""

import time

import torch

from determined import pytorch


class NoOpTrial(pytorch.PyTorchTrial):
    def __init__(self, context):
        self.context = context
        self.model = context.wrap_model(torch.nn.Linear(1, 1))
        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.0))
        self.pause = float(context.get_hparam("batch_seconds"))
        self.first_batch_file = context.get_hparams().get("first_batch_file")

    def build_training_data_loader(self):
        return pytorch.DataLoader(torch.utils.data.TensorDataset(torch.zeros(64, 1)), batch_size=1)

    def build_validation_data_loader(self):
        return pytorch.DataLoader(torch.utils.data.TensorDataset(torch.zeros(1, 1)), batch_size=1)

    def train_batch(self, batch, epoch_idx, batch_idx):
        if self.first_batch_file:
            with open(self.first_batch_file, "a") as f:
                f.write(f"{time.time()}\n")
            self.first_batch_file = None
        time.sleep(self.pause)
        return {"loss": 0.0}

    def evaluate_batch(self, batch):
        return {"validation_loss": 0.0}
