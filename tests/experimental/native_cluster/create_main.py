"""``det.experimental.create`` with a PyTorchTrial defined in this very script.

The class lives in ``__main__``, so the cluster gets it by re-running the script
(``internal.native.command``); ``create`` returns the experiment id here.
"""

import sys

import torch

from determined import experimental, pytorch


class MainTrial(pytorch.PyTorchTrial):
    def __init__(self, context):
        self.context = context
        self.model = context.wrap_model(torch.nn.Linear(4, 1))
        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(),
                                                          lr=context.get_hparam("lr")))
        gen = torch.Generator().manual_seed(0)
        self.x = torch.rand(64, 4, generator=gen)
        self.y = self.x.sum(dim=1, keepdim=True)

    def build_training_data_loader(self):
        data = torch.utils.data.TensorDataset(self.x, self.y)
        return pytorch.DataLoader(data, batch_size=self.context.get_per_slot_batch_size())

    def build_validation_data_loader(self):
        data = torch.utils.data.TensorDataset(self.x, self.y)
        return pytorch.DataLoader(data, batch_size=self.context.get_per_slot_batch_size())

    def train_batch(self, batch, epoch_idx, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        return {"loss": loss}

    def evaluate_batch(self, batch):
        x, y = batch
        return {"validation_loss": torch.nn.functional.mse_loss(self.model(x), y)}


config = {
    "hyperparameters": {"global_batch_size": 8, "lr": 0.05},
    "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 12}},
    "scheduling_unit": 6,
    "max_restarts": 0,
}
exp_id = experimental.create(MainTrial, config, context_dir=sys.argv[1] if len(sys.argv) > 1 else ".")
print(f"create returned {exp_id}")
