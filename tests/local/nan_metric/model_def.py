import math
import torch
from torch import nn
from determined import pytorch


SCORES = [1.0, math.nan, 0.5, 0.25]


class NanTrial(pytorch.PyTorchTrial):
    """Scores 1.0, then NaN, then 0.5 at its validations."""

    def __init__(self, context):
        self.context = context
        self.validations = 0
        self.model = context.wrap_model(nn.Linear(4, 1))
        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.1))

    def build_training_data_loader(self):
        ds = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        return pytorch.DataLoader(ds, batch_size=8)

    def build_validation_data_loader(self):
        ds = torch.utils.data.TensorDataset(torch.randn(8, 4), torch.randn(8, 1))
        return pytorch.DataLoader(ds, batch_size=8)

    def train_batch(self, batch, epoch_idx, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        return {"loss": loss}

    def evaluate_full_dataset(self, data_loader):
        self.validations += 1
        return {"score": SCORES[min(self.validations, len(SCORES)) - 1]}
