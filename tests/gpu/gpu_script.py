"""A Core API script (the user's own loop) on its trial's device, launched by
``determined.launch.torch_distributed``: NCCL and DistributedDataParallel on a GPU, gloo
on a CPU. Dropout draws from the device's random stream, so a run resumed from a
checkpoint ends with the same weights as one never stopped only if the script's state
(model, optimizer, CPU and CUDA random streams) came back exactly.

Hyperparameters: ``out_dir`` (each trial writes ``<trial id>.json`` there at its end),
``crash_trial`` (that trial SIGKILLs itself once, at step ``crash_at``, between two
checkpoints)."""

import hashlib
import json
import os
import signal

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import determined as det
from determined import core

STEPS, CHECKPOINT_EVERY = 20, 5


def batch(step: int, device: torch.device):
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(64, 32, generator=g)
    y = x[:, :4].sum(dim=1, keepdim=True)
    return (x.pin_memory().to(device, non_blocking=True) if device.type == "cuda" else x,
            y.pin_memory().to(device, non_blocking=True) if device.type == "cuda" else y)


def main() -> None:
    info = det.get_cluster_info()
    hparams = info.trial.hparams
    trial_id = info.trial.trial_id
    distributed = core.DistributedContext.from_torch_distributed()
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", distributed.local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if cuda else "gloo")
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Dropout(0.3),
                                torch.nn.Linear(64, 1)).to(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if cuda else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    steps, resumed_at = 0, None
    marker = os.path.join(hparams["out_dir"], f"{trial_id}.crashed")

    with core.init(distributed=distributed) as ctx:
        if info.latest_checkpoint:
            with ctx.checkpoint.restore_path(info.latest_checkpoint) as path:
                state = torch.load(path / "state.pt", map_location="cpu", weights_only=False)
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            torch.set_rng_state(state["rng"])
            if cuda:
                torch.cuda.set_rng_state(state["cuda_rng"])
            steps = resumed_at = state["steps"]

        def checkpoint() -> None:
            with ctx.checkpoint.store_path({"steps_completed": steps}) as (path, _):
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                            "rng": torch.get_rng_state(), "steps": steps,
                            "cuda_rng": torch.cuda.get_rng_state() if cuda else None},
                           path / "state.pt")

        for op in ctx.searcher.operations():
            while steps < min(op.length, STEPS):
                x, y = batch(steps, device)
                loss = torch.nn.functional.mse_loss(ddp(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                steps += 1
                if steps % CHECKPOINT_EVERY == 0:
                    ctx.train.report_training_metrics(steps, {"loss": loss.item()})
                    checkpoint()
                if (trial_id == hparams["crash_trial"] and steps == hparams["crash_at"]
                        and not os.path.exists(marker)):
                    open(marker, "w").close()
                    os.kill(os.getpid(), signal.SIGKILL)
            ctx.train.report_validation_metrics(steps, {"validation_loss": loss.item()})
            op.report_completed(loss.item())

    weights = hashlib.sha256(b"".join(p.detach().cpu().numpy().tobytes()
                                      for p in model.parameters())).hexdigest()
    result = {"device": str(device), "backend": dist.get_backend(),
              "wrapped": type(ddp).__name__, "resumed_at": resumed_at, "weights": weights}
    with open(os.path.join(hparams["out_dir"], f"{trial_id}.json"), "w") as f:
        json.dump(result, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
