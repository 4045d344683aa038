"""The benchmark's trial: a one-hidden-layer MLP on scikit-learn's digits, trained with SGD.

A :class:`DigitsTrial` keeps its model, optimizer, data order and dropout RNG in memory
between operations (that is its "checkpoint"), so a trial trained to 64 batches and later
to 256 batches trains exactly the same batches as one trained to 256 at once. Everything
random about a trial (weight init, batch order, dropout masks) comes from its own seed, so
the same (hyperparameters, seed) pair gives the same learning curve whatever searcher runs
it and however its work is interleaved with other trials.
"""

from __future__ import annotations

from typing import Any, Mapping, Tuple

import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

BATCH_SIZE = 32
VALIDATION_FRACTION = 0.25
SPLIT_SEED = 0

Data = Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def load_data() -> Data:
    """Fixed stratified split of the 1,797 digits: 1,347 train / 450 validation, pixels / 16."""
    x, y = load_digits(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(
        x / 16.0, y, test_size=VALIDATION_FRACTION, stratify=y, random_state=SPLIT_SEED
    )
    return (
        torch.tensor(x_train, dtype=torch.float32),
        torch.tensor(y_train, dtype=torch.int64),
        torch.tensor(x_val, dtype=torch.float32),
        torch.tensor(y_val, dtype=torch.int64),
    )


class DigitsTrial:
    """One trial: 64 -> hidden_size -> ReLU -> dropout -> 10, SGD with momentum and L2.

    Hyperparameters: ``learning_rate``, ``momentum``, ``hidden_size``, ``dropout``,
    ``weight_decay`` (batch size is fixed at :data:`BATCH_SIZE` so every batch costs the
    same compute).
    """

    def __init__(self, hparams: Mapping[str, Any], seed: int, data: Data) -> None:
        self.x_train, self.y_train, self.x_val, self.y_val = data
        self.hidden = int(hparams["hidden_size"])
        self.dropout = float(hparams["dropout"])
        self.gen = torch.Generator().manual_seed(int(seed))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            self.fc1 = nn.Linear(self.x_train.shape[1], self.hidden)
            self.fc2 = nn.Linear(self.hidden, 10)
        params = list(self.fc1.parameters()) + list(self.fc2.parameters())
        self.opt = torch.optim.SGD(
            params,
            lr=float(hparams["learning_rate"]),
            momentum=float(hparams["momentum"]),
            weight_decay=float(hparams["weight_decay"]),
            foreach=False,
        )
        self.loss_fn = nn.CrossEntropyLoss()
        self.batches = 0
        self._perm = torch.randperm(len(self.x_train), generator=self.gen)
        self._pos = 0

    def _forward(self, x: torch.Tensor, train: bool) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        if train and self.dropout > 0.0:
            keep = torch.rand(h.shape, generator=self.gen) >= self.dropout
            h = h * keep / (1.0 - self.dropout)
        return self.fc2(h)

    def train_to(self, total_batches: int) -> int:
        """Train until ``total_batches`` batches in total; return how many were trained now."""
        trained = 0
        n = len(self.x_train)
        while self.batches < total_batches:
            if self._pos + BATCH_SIZE > n:  # drop the ragged tail, reshuffle
                self._perm = torch.randperm(n, generator=self.gen)
                self._pos = 0
            idx = self._perm[self._pos : self._pos + BATCH_SIZE]
            self._pos += BATCH_SIZE
            self.opt.zero_grad(set_to_none=True)
            loss = self.loss_fn(self._forward(self.x_train[idx], True), self.y_train[idx])
            loss.backward()
            self.opt.step()
            self.batches += 1
            trained += 1
        return trained

    def validate(self) -> float:
        """Accuracy on the validation split (a diverged model simply scores badly)."""
        with torch.inference_mode():
            pred = self._forward(self.x_val, False).argmax(dim=1)
            return float((pred == self.y_val).float().mean().item())
