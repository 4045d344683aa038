"""One process timing every variant of the Core API overhead benchmark, interleaved
(rotating order per repetition), on workload W1 of ``benchmarks/overhead`` (the same
model, data and step clock). Writes ``{variant: [seconds per rep]}`` as JSON.

Variants: ``bare`` (a plain PyTorch loop), ``core_1`` / ``core_100`` (the same loop
calling ``core.train.report_training_metrics`` every batch / every 100 batches),
``lightning`` (plain Lightning) and ``lightning_det`` (Lightning with
``DeterminedCallback``). The step clock runs from the start of the first batch's step to
the end of the last one's, so set-up is excluded for all.
"""

import argparse
import json
import os
import sys
import tempfile

import torch

# benchmarks/overhead's workloads (run.py copies the file beside this one for --platform)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "overhead"))

from _workloads import WORKLOADS, StepClock, make_dataset, make_model  # noqa: E402

VARIANTS = ["bare", "core_1", "core_100", "lightning", "lightning_det"]


class _Steps:
    """steps_completed keeps growing across repetitions (reports never go back)."""
    offset = 0


def plain_loop(sizes, batch_size, batches, core_context=None, every=0):
    torch.manual_seed(0)
    model = make_model(sizes)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    loader = torch.utils.data.DataLoader(make_dataset(sizes, batch_size, batches),
                                         batch_size=batch_size, shuffle=True)
    clock = StepClock(batches)
    losses = []
    for i, (x, y) in enumerate(loader):
        clock.step_started(i)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        if every == 1:
            core_context.train.report_training_metrics(_Steps.offset + i + 1, {"loss": loss.item()})
        elif every:
            losses.append(loss.detach())
            if (i + 1) % every == 0:
                core_context.train.report_training_metrics(
                    _Steps.offset + i + 1, {"loss": torch.stack(losses).mean().item()})
                losses = []
        clock.step_ended(i)
    _Steps.offset += batches
    return clock.seconds


def lightning_fit(sizes, batch_size, batches, with_callback=False):
    import lightning as L

    from determined.lightning import DeterminedCallback

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = make_model(sizes)
            self.loss_fn = torch.nn.CrossEntropyLoss()

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = self.loss_fn(self.net(x), y)
            self.log("loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01, momentum=0.9)

    class Clock(L.Callback):
        def __init__(self):
            self.clock = StepClock(batches)

        def on_train_batch_start(self, trainer, module, batch, batch_idx):
            self.clock.step_started(batch_idx)

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            self.clock.step_ended(batch_idx)

    torch.manual_seed(0)
    clock = Clock()
    callbacks = [clock]
    if with_callback:
        # The one-line use: the callback opens its own core context. A fresh directory
        # per run, or a run would resume from the previous one's final checkpoint.
        os.environ["DET_CORE_DIR"] = tempfile.mkdtemp(prefix="lightning-det-", dir=os.getcwd())
        callbacks.append(DeterminedCallback())
    trainer = L.Trainer(max_steps=batches, accelerator="cpu", devices=1, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, callbacks=callbacks)
    loader = torch.utils.data.DataLoader(make_dataset(sizes, batch_size, batches),
                                         batch_size=batch_size, shuffle=True)
    trainer.fit(Module(), loader)
    return clock.clock.seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--batches", type=int, default=None)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    # One thread in both modes: on the platform OMP_NUM_THREADS is the trial's share of
    # the CPUs (2 on a 2-core machine), and two threads on a tiny model stall whenever
    # another process takes a core.
    torch.set_num_threads(1)
    import determined as det

    sizes, batch_size, batches, _ = WORKLOADS["W1"]
    batches = args.batches or batches
    variants = args.variants.split(",")
    times = {v: [] for v in variants}
    with det.core.init() as core_context:
        runs = {
            "bare": lambda: plain_loop(sizes, batch_size, batches),
            "core_1": lambda: plain_loop(sizes, batch_size, batches, core_context, every=1),
            "core_100": lambda: plain_loop(sizes, batch_size, batches, core_context, every=100),
            "lightning": lambda: lightning_fit(sizes, batch_size, batches),
            "lightning_det": lambda: lightning_fit(sizes, batch_size, batches, with_callback=True),
        }
        for rep in range(args.reps):
            for k in range(len(variants)):
                variant = variants[(rep + k) % len(variants)]
                times[variant].append(runs[variant]())
        if det.get_cluster_info() is not None:  # run.py --platform: max_length is the total
            for op in core_context.searcher.operations():
                core_context.train.report_validation_metrics(_Steps.offset, {"loss": 0.0})
                op.report_completed(0.0)
    with open(args.out, "w") as f:
        json.dump({"batches": batches, "times": times}, f)


if __name__ == "__main__":
    main()
