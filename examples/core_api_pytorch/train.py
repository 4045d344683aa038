"""Your own PyTorch loop on the platform with the Core API (Determined 0.38's
``determined.core``): the digits classifier.

It follows the searcher's operations (train to ``op.length`` batches, validate,
``op.report_completed``), reports metrics, checkpoints the model, optimizer, step count
and RNG state every ``--checkpoint-every`` batches, at the end of each operation and when
preempted, and resumes exactly from
its latest checkpoint: the order of the training data depends only on the epoch, so a
restarted trial sees the same batches as one never interrupted.

By hand (``python train.py --batches 200``) everything goes to ``./determined-core``
(``DET_CORE_DIR``), and running it again there resumes.
"""

import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits

import determined as det

TRAIN_SIZE = 1500  # of 1,797 images; the rest validate


def digits():
    x, y = load_digits(return_X_y=True)
    order = np.random.RandomState(0).permutation(len(x))
    x = torch.tensor(x[order] / 16.0, dtype=torch.float32)
    y = torch.tensor(y[order], dtype=torch.int64)
    return (x[:TRAIN_SIZE], y[:TRAIN_SIZE]), (x[TRAIN_SIZE:], y[TRAIN_SIZE:])


def batch_at(step: int, data, batch_size: int, seed: int):
    """The batch of training step ``step``: each epoch's shuffle is seeded by the epoch."""
    x, y = data
    per_epoch = len(x) // batch_size
    epoch, index = divmod(step, per_epoch)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed * 1000 + epoch))
    rows = order[index * batch_size:(index + 1) * batch_size]
    return x[rows], y[rows]


def validate(model, data):
    model.eval()
    with torch.no_grad():
        logits = model(data[0])
    model.train()
    return {"validation_loss": torch.nn.functional.cross_entropy(logits, data[1]).item(),
            "validation_error": (logits.argmax(dim=1) != data[1]).float().mean().item()}


def save(core_context, steps, model, opt):
    with core_context.checkpoint.store_path({"steps_completed": steps}) as (path, _):
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "steps": steps,
                    "rng": torch.get_rng_state()}, os.path.join(path, "state.pt"))


def main(core_context, batches: int, checkpoint_every: int) -> None:
    info = det.get_cluster_info()
    hparams = info.trial.hparams if info else {
        "batch_size": 32, "hidden_size": 64, "dropout": 0.1, "learning_rate": 0.05}
    seed = info.trial.trial_seed if info else 0
    torch.manual_seed(seed)
    train, val = digits()
    model = torch.nn.Sequential(
        torch.nn.Linear(64, hparams["hidden_size"]), torch.nn.ReLU(),
        torch.nn.Dropout(hparams["dropout"]), torch.nn.Linear(hparams["hidden_size"], 10))
    opt = torch.optim.SGD(model.parameters(), lr=hparams["learning_rate"], momentum=0.9)
    batch_size = int(hparams["batch_size"])

    steps = 0
    latest = info.latest_checkpoint if info else det.core.latest_local_checkpoint()
    if latest is not None:
        with core_context.checkpoint.restore_path(latest) as path:
            state = torch.load(os.path.join(path, "state.pt"), weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        torch.set_rng_state(state["rng"])
        steps = state["steps"]
        print(f"resumed from checkpoint {latest} at step {steps}")

    for op in core_context.searcher.operations():
        length = op.length if info else batches  # off the platform: --batches
        losses = []
        while steps < length:
            x, y = batch_at(steps, train, batch_size, seed)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
            losses.append(loss.item())
            if steps % 10 == 0:
                core_context.train.report_training_metrics(steps, {"loss": float(np.mean(losses))})
                losses = []
                op.report_progress(steps)
            if steps % checkpoint_every == 0 and steps < length:
                save(core_context, steps, model, opt)
            if core_context.preempt.should_preempt():
                save(core_context, steps, model, opt)
                print(f"preempted at step {steps}")
                return
        metrics = validate(model, val)
        print(f"validated at step {steps}: validation_error {metrics['validation_error']:.4f}")
        core_context.train.report_validation_metrics(steps, metrics)
        save(core_context, steps, model, opt)
        op.report_completed(metrics["validation_error"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=200, help="length off the platform")
    parser.add_argument("--checkpoint-every", type=int, default=100)
    args = parser.parse_args()
    with det.core.init() as core_context:
        main(core_context, args.batches, args.checkpoint_every)
