"""Our PyTorchTrial for the GPU throughput benchmark: the model and data of
``_models``; ``amp`` turns on ``configure_apex_amp`` (torch.amp without apex)."""

import torch

from determined import pytorch

from _models import StepClock, make_dataset, make_model

CLOCK = None


class BenchTrial(pytorch.PyTorchTrial):
    def __init__(self, context):
        global CLOCK
        self.context = context
        hp = context.get_hparams()
        self.name, self.s = hp["workload"], hp["settings"]
        self.model = context.wrap_model(make_model(self.name, self.s))
        self.opt = context.wrap_optimizer(
            torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9))
        if hp["amp"]:
            self.model, self.opt = context.configure_apex_amp(self.model, self.opt)
        self.loss_fn = torch.nn.CrossEntropyLoss()
        CLOCK = StepClock(self.s["warmup"], self.s["timed"], context.device)

    def build_training_data_loader(self):
        return pytorch.DataLoader(make_dataset(self.name, self.s), batch_size=self.s["batch"],
                                  shuffle=True, drop_last=True)

    def build_validation_data_loader(self):
        return self.build_training_data_loader()

    def train_batch(self, batch, epoch_idx, batch_idx):
        CLOCK.step_started(batch_idx)
        x, y = batch
        loss = self.loss_fn(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        CLOCK.step_ended(batch_idx)
        return {"loss": loss}

    def evaluate_batch(self, batch):
        return {"loss": 0.0}
