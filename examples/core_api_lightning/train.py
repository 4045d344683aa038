"""A plain Lightning script (the digits classifier) that runs on the platform with one
added line: ``callbacks=[DeterminedCallback()]``.

By hand (``python train.py``) it trains ``--epochs`` epochs, writing metrics and
checkpoints under ``./determined-core`` (``DET_CORE_DIR``); run again in the same
directory it resumes from the latest checkpoint. As an experiment's entrypoint it takes
its hyperparameters from the trial and its length from the searcher.
"""

import argparse
import math

try:
    import lightning as L
except ModuleNotFoundError as e:
    raise SystemExit(f"{e}: this example needs the 'lightning' extra "
                     "(pip install -e '.[lightning]' in the platform's checkout)")
import numpy as np
import torch
from sklearn.datasets import load_digits

import determined as det
from determined.lightning import DeterminedCallback

TRAIN_SIZE = 1500  # of 1,797 images; the rest validate


class DigitsData(L.LightningDataModule):
    def __init__(self, batch_size: int):
        super().__init__()
        self.batch_size = batch_size

    def setup(self, stage: str) -> None:
        x, y = load_digits(return_X_y=True)
        order = np.random.RandomState(0).permutation(len(x))
        x = torch.tensor(x[order] / 16.0, dtype=torch.float32)
        y = torch.tensor(y[order], dtype=torch.int64)
        self.train = torch.utils.data.TensorDataset(x[:TRAIN_SIZE], y[:TRAIN_SIZE])
        self.val = torch.utils.data.TensorDataset(x[TRAIN_SIZE:], y[TRAIN_SIZE:])

    def train_dataloader(self):
        return torch.utils.data.DataLoader(self.train, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self):
        return torch.utils.data.DataLoader(self.val, batch_size=100)


class DigitsMLP(L.LightningModule):
    def __init__(self, hidden_size: int, dropout: float, learning_rate: float):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(64, hidden_size), torch.nn.ReLU(), torch.nn.Dropout(dropout),
            torch.nn.Linear(hidden_size, 10))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        self.log("validation_loss", torch.nn.functional.cross_entropy(logits, y))
        self.log("validation_error", (logits.argmax(dim=1) != y).float().mean())

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=self.hparams.learning_rate, momentum=0.9)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.9)
        return {"optimizer": opt, "lr_scheduler": sched}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()

    info = det.get_cluster_info()
    hparams = info.trial.hparams if info else {
        "batch_size": 32, "hidden_size": 64, "dropout": 0.1, "learning_rate": 0.05}
    seed = info.trial.trial_seed if info else 0
    epochs = args.epochs
    length = info.trial._config.get("searcher", {}).get("max_length") if info else None
    if length:  # the trainer's own length must cover the searcher's (epochs or batches)
        epochs = length.get("epochs") or math.ceil(
            length["batches"] * int(hparams["batch_size"]) / TRAIN_SIZE)

    L.seed_everything(seed, verbose=False)
    model = DigitsMLP(hparams["hidden_size"], hparams["dropout"], hparams["learning_rate"])
    trainer = L.Trainer(
        max_epochs=epochs, accelerator="cpu", devices=1, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, log_every_n_steps=10,
        callbacks=[DeterminedCallback()],  # the one line
    )
    trainer.fit(model, datamodule=DigitsData(int(hparams["batch_size"])))


if __name__ == "__main__":
    main()
