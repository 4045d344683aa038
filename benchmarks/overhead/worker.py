"""One timed training run of one variant, in the interpreter of its own environment.

    python worker.py VARIANT WORKLOAD SEED [BATCHES [warm]]   # prints {"seconds": ...}

Variants: ``bare`` (a hand-written loop), ``ours`` (our PyTorchTrial through the real
trial runner), ``lightning`` (a LightningModule and ``Trainer``), ``det038``
(Determined 0.38's PyTorchTrial through its ``pytorch.Trainer`` in local training mode).
All use one torch thread, the same model, data, SGD settings and batch order policy
(shuffled ``DataLoader``), and time training with :class:`_workloads.StepClock`.
"""

import json
import os
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _workloads import WORKLOADS, StepClock, make_dataset, make_model  # noqa: E402


def run_bare(sizes, bs, n, seed):
    torch.manual_seed(seed)
    model = make_model(sizes)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    loader = torch.utils.data.DataLoader(make_dataset(sizes, bs, n), batch_size=bs, shuffle=True)
    clock = StepClock(n)
    done = 0
    while done < n:
        for x, y in loader:
            clock.step_started(done)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            clock.step_ended(done)
            done += 1
            if done == n:
                break
    return clock.seconds


def run_ours(sizes, bs, n, seed):
    from determined.config import Length, validate_config
    from determined.harness import InProcessHost, OpKind, TrialEnv, TrialOp, TrialRunner
    from determined.storage import SharedFSStorageManager

    hparams = {"global_batch_size": bs, "sizes": sizes, "batches": n}
    cfg = validate_config({
        "entrypoint": "clocked_def:ClockedTrial",
        "hyperparameters": hparams,
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": n}},
    })
    env = TrialEnv(cfg, hparams, HERE, trial_seed=seed)
    host = InProcessHost([TrialOp(OpKind.TRAIN, Length.from_dict({"batches": n}))])
    with tempfile.TemporaryDirectory() as tmp:
        TrialRunner(env, host, SharedFSStorageManager(tmp)).run()
    import clocked_def

    return clocked_def.CLOCK.seconds


def run_lightning(sizes, bs, n, seed):
    import lightning as L

    clock = StepClock(n)

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = make_model(sizes)
            self.loss_fn = torch.nn.CrossEntropyLoss()

        def training_step(self, batch, batch_idx):
            x, y = batch
            return self.loss_fn(self.model(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01, momentum=0.9)

        def on_train_batch_start(self, batch, batch_idx):
            clock.step_started(self.global_step)

        def on_train_batch_end(self, outputs, batch, batch_idx):
            clock.step_ended(self.global_step - 1)

    torch.manual_seed(seed)
    loader = torch.utils.data.DataLoader(make_dataset(sizes, bs, n), batch_size=bs, shuffle=True)
    trainer = L.Trainer(
        max_steps=n, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
        limit_val_batches=0,
    )
    trainer.fit(Module(), loader)
    return clock.seconds


def run_det038(sizes, bs, n, seed):
    from determined import pytorch

    clock = StepClock(n)
    data = make_dataset(sizes, bs, n)

    class Trial(pytorch.PyTorchTrial):
        def __init__(self, context):
            self.context = context
            self.model = context.wrap_model(make_model(sizes))
            self.opt = context.wrap_optimizer(
                torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9))
            self.loss_fn = torch.nn.CrossEntropyLoss()

        def build_training_data_loader(self):
            return pytorch.DataLoader(data, batch_size=bs, shuffle=True)

        def build_validation_data_loader(self):
            return pytorch.DataLoader(data, batch_size=bs)

        def train_batch(self, batch, epoch_idx, batch_idx):
            clock.step_started(batch_idx)
            x, y = batch
            loss = self.loss_fn(self.model(x), y)
            self.context.backward(loss)
            self.context.step_optimizer(self.opt)
            clock.step_ended(batch_idx)
            return {"loss": loss}

        def evaluate_batch(self, batch):
            x, y = batch
            return {"validation_loss": self.loss_fn(self.model(x), y)}

    torch.manual_seed(seed)
    with pytorch.init(hparams={"global_batch_size": bs}) as ctx:
        trial = Trial(ctx)
        trainer = pytorch.Trainer(trial, ctx)
        trainer.fit(max_length=pytorch.Batch(n), checkpoint_period=pytorch.Batch(10 * n),
                    validation_period=pytorch.Batch(10 * n))
    return clock.seconds


VARIANTS = {"bare": run_bare, "ours": run_ours, "lightning": run_lightning, "det038": run_det038}


def main():
    variant, workload, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    torch.set_num_threads(1)
    sizes, bs, n, _ = WORKLOADS[workload]
    if len(sys.argv) > 4:
        n = int(sys.argv[4]) or n
    if len(sys.argv) > 5:  # a short warm-up run first (imports, allocator)
        VARIANTS[variant](sizes, bs, min(n, 50), seed)
    print(json.dumps({"seconds": VARIANTS[variant](sizes, bs, n, seed)}))


if __name__ == "__main__":
    main()
