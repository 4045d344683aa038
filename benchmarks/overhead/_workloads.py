"""Workloads shared by every variant of the overhead benchmark (no determined import,
so the peers' own virtual environments can load it too)."""

import time

import torch
from torch import nn

WORKLOADS = {
    # name: (layer sizes, batch size, batches, description)
    "W1": ([32, 64, 10], 8, 2000, "MLP 32-64-10, batch 8, 2,000 batches (overhead-bound)"),
    "W2": ([784, 1024, 1024, 10], 256, 200,
           "MLP 784-1024-1024-10, batch 256, 200 batches (compute-bound)"),
}


def make_model(sizes):
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def make_dataset(sizes, batch_size, batches, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = batch_size * batches
    x = torch.randn(n, sizes[0], generator=g)
    y = torch.randint(0, sizes[-1], (n,), generator=g)
    return torch.utils.data.TensorDataset(x, y)


class StepClock:
    """Training time as every variant measures it: from the start of the first batch's
    step to the end of the last one's (data set-up and the first fetch excluded)."""

    def __init__(self, batches):
        self.batches = batches
        self.start = self.end = None

    def step_started(self, batch_idx):
        if batch_idx == 0:
            self.start = time.perf_counter()

    def step_ended(self, batch_idx):
        if batch_idx == self.batches - 1:
            self.end = time.perf_counter()

    @property
    def seconds(self):
        return self.end - self.start



