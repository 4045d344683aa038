"""A small GAN on the scikit-learn digits: two models, two optimizers, one trial.

The generator maps noise to 8x8 digit images; the discriminator tells real from
fake. Each batch steps the discriminator, then the generator, through the
context (``backward`` / ``step_optimizer``), as a Determined 0.13 GAN would.
"""

import torch
from sklearn.datasets import load_digits
from torch import nn

from determined import pytorch


def _digits() -> torch.utils.data.TensorDataset:
    x, _ = load_digits(return_X_y=True)
    x = torch.tensor(x / 8.0 - 1.0, dtype=torch.float32)  # scale to [-1, 1]
    return torch.utils.data.TensorDataset(x)


class DigitsGANTrial(pytorch.PyTorchTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context
        self.noise_dim = context.get_hparam("noise_dim")
        hidden = context.get_hparam("hidden_size")
        self.generator = context.wrap_model(nn.Sequential(
            nn.Linear(self.noise_dim, hidden), nn.LeakyReLU(0.2),
            nn.Linear(hidden, 64), nn.Tanh(),
        ))
        self.discriminator = context.wrap_model(nn.Sequential(
            nn.Linear(64, hidden), nn.LeakyReLU(0.2),
            nn.Linear(hidden, 1),
        ))
        lr = context.get_hparam("learning_rate")
        self.opt_g = context.wrap_optimizer(
            torch.optim.Adam(self.generator.parameters(), lr=lr, betas=(0.5, 0.999)))
        self.opt_d = context.wrap_optimizer(
            torch.optim.Adam(self.discriminator.parameters(), lr=lr, betas=(0.5, 0.999)))
        self.data = _digits()
        self.bce = nn.BCEWithLogitsLoss()

    def build_training_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(
            self.data, batch_size=self.context.get_per_slot_batch_size(), shuffle=True,
            drop_last=True,
        )

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(self.data, batch_size=256)

    def _noise(self, n: int) -> torch.Tensor:
        return torch.randn(n, self.noise_dim, device=self.context.device)

    def train_batch(self, batch, epoch_idx: int, batch_idx: int):
        (real,) = batch
        n = real.shape[0]
        ones, zeros = torch.ones(n, 1), torch.zeros(n, 1)

        fake = self.generator(self._noise(n))
        loss_d = self.bce(self.discriminator(real), ones) + self.bce(
            self.discriminator(fake.detach()), zeros)
        self.context.backward(loss_d)
        self.context.step_optimizer(self.opt_d)

        loss_g = self.bce(self.discriminator(fake), ones)
        self.context.backward(loss_g)
        self.context.step_optimizer(self.opt_g)
        return {"loss_d": loss_d, "loss_g": loss_g}

    def evaluate_batch(self, batch):
        (real,) = batch
        n = real.shape[0]
        fake = self.generator(self._noise(n))
        # How far the generated pixel statistics are from the real ones (lower is better).
        moment_gap = (fake.mean(0) - real.mean(0)).abs().mean() + (
            fake.std(0) - real.std(0)).abs().mean()
        d_real = torch.sigmoid(self.discriminator(real)).mean()
        d_fake = torch.sigmoid(self.discriminator(fake)).mean()
        return {"moment_gap": moment_gap, "d_real": d_real, "d_fake": d_fake}
