"""Training throughput on a GPU: our PyTorchTrial against a bare PyTorch loop and
Lightning (where it imports), in fp32 and in mixed precision, on an overhead-bound MLP
and a compute-bound ResNet-18 (plain torch, no torchvision).

    python benchmarks/gpu/throughput.py [--reps 3] [--json OUT] [--cpu]

Every variant trains the same model on the same data (a shuffled DataLoader, pinned
on a GPU, batches copied without blocking) with SGD and momentum. Mixed precision is
float16 autocast with a dynamic GradScaler on a GPU (ours: ``configure_apex_amp``
without apex; Lightning: ``precision="16-mixed"``), bfloat16 autocast on the CPU. All
runs share one process; within each repetition the variants alternate in a rotating
order, so drift hits all alike. A run's time is ms per batch over its timed batches
(after warm-up ones, the GPU synchronized at both ends); the table shows medians over
repetitions and each variant's ratio to the bare loop. ``--cpu`` runs tiny sizes on
the CPU (a smoke test of the script, not a measurement). Stopped by SIGTERM (the GPU
check's time cap), it prints the rows measured so far and exits with 124.
"""

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _models import WORKLOADS, StepClock, make_dataset, make_model  # noqa: E402

def _loader(name: str, s: Dict[str, Any], device: torch.device) -> Any:
    return torch.utils.data.DataLoader(make_dataset(name, s), batch_size=s["batch"], shuffle=True,
                                       drop_last=True, pin_memory=device.type == "cuda")


def _amp_dtype(device: torch.device) -> torch.dtype:
    return torch.float16 if device.type == "cuda" else torch.bfloat16


def run_bare(name: str, s: Dict[str, Any], device: torch.device, amp: bool) -> float:
    torch.manual_seed(0)
    model = make_model(name, s).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler("cuda") if amp and device.type == "cuda" else None
    clock = StepClock(s["warmup"], s["timed"], device)
    for i, (x, y) in enumerate(_loader(name, s, device)):
        clock.step_started(i)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=_amp_dtype(device), enabled=amp):
            loss = loss_fn(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        opt.zero_grad()
        clock.step_ended(i)
    return clock.ms_per_batch


def run_ours(name: str, s: Dict[str, Any], device: torch.device, amp: bool) -> float:
    from determined.config import Length, validate_config
    from determined.harness import InProcessHost, OpKind, TrialEnv, TrialOp, TrialRunner
    from determined.storage import SharedFSStorageManager

    batches = s["warmup"] + s["timed"]
    hparams = {"global_batch_size": s["batch"], "workload": name, "settings": s, "amp": amp}
    cfg = validate_config({
        "entrypoint": "bench_def:BenchTrial",
        "hyperparameters": {k: v for k, v in hparams.items() if k != "settings"},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": batches}},
    })
    env = TrialEnv(cfg, hparams, HERE, trial_seed=0)
    host = InProcessHost([TrialOp(OpKind.TRAIN, Length.from_dict({"batches": batches}))])
    with tempfile.TemporaryDirectory() as tmp:
        TrialRunner(env, host, SharedFSStorageManager(tmp)).run()
    import bench_def

    return bench_def.CLOCK.ms_per_batch


def _lightning() -> Optional[Any]:
    for module in ("lightning", "pytorch_lightning"):
        try:
            return __import__(module)
        except ImportError:
            continue
    return None


def run_lightning(name: str, s: Dict[str, Any], device: torch.device, amp: bool) -> float:
    L = _lightning()
    clock = StepClock(s["warmup"], s["timed"], device)

    class Module(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = make_model(name, s)
            self.loss_fn = torch.nn.CrossEntropyLoss()

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            x, y = batch
            return self.loss_fn(self.model(x), y)

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.01, momentum=0.9)

        def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
            clock.step_started(batch_idx)

        def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
            clock.step_ended(batch_idx)

    torch.manual_seed(0)
    precision = ("16-mixed" if device.type == "cuda" else "bf16-mixed") if amp else "32-true"
    trainer = L.Trainer(
        max_steps=s["warmup"] + s["timed"], accelerator="gpu" if device.type == "cuda" else "cpu",
        devices=1, precision=precision, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
        limit_val_batches=0)
    trainer.fit(Module(), _loader(name, s, device))
    return clock.ms_per_batch


VARIANTS: Dict[str, Callable[..., float]] = {
    "bare": run_bare, "ours": run_ours, "lightning": run_lightning}


class Stopped(Exception):
    """SIGTERM arrived: report what was measured."""


def _stop(signum: int, frame: Any) -> None:
    raise Stopped()


def measure(reps: int, scale: str, device: torch.device, variants: List[str],
            rows: List[Dict[str, Any]]) -> None:
    """Appends to ``rows`` the median ms per batch of each variant, per workload and
    precision, as each is measured."""
    for name, workload in WORKLOADS.items():
        s = workload[scale]
        for amp in (False, True):
            times: Dict[str, List[float]] = {v: [] for v in variants}
            for rep in range(reps):
                order = variants[rep % len(variants):] + variants[:rep % len(variants)]
                for variant in order:
                    times[variant].append(VARIANTS[variant](name, s, device, amp))
            what = workload["what"] if scale == "gpu" else f"{name} (tiny CPU sizes)"
            rows.append({"workload": name, "what": what,
                         "precision": "mixed" if amp else "fp32",
                         "ms_per_batch": {v: statistics.median(t) for v, t in times.items()},
                         "runs": times})
            print(f"# {name} {'mixed' if amp else 'fp32'}: "
                  + ", ".join(f"{v} {statistics.median(t):.3f} ms" for v, t in times.items()),
                  file=sys.stderr, flush=True)


def table(rows: List[Dict[str, Any]], device: torch.device, variants: List[str], reps: int) -> str:
    card = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU (smoke run)"
    amp = "float16 autocast + GradScaler" if device.type == "cuda" else "bfloat16 autocast"
    lines = [f"GPU throughput on {card}, torch {torch.__version__}; mixed = {amp}; "
             f"ms per batch, median of {reps} interleaved runs (ratio to the bare loop)", "",
             "| model | precision | " + " | ".join(variants) + " |",
             "|---|---|" + "---|" * len(variants)]
    for row in rows:
        bare = row["ms_per_batch"].get("bare")
        cells = []
        for v in variants:
            ms = row["ms_per_batch"][v]
            ratio = f" ({ms / bare:.2f}x)" if bare and v != "bare" else ""
            cells.append(f"{ms:.3f}{ratio}")
        lines.append(f"| {row['what']} | {row['precision']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--json", default=None, help="also write the results here")
    p.add_argument("--cpu", action="store_true", help="tiny sizes on the CPU (smoke run)")
    args = p.parse_args()
    if not args.cpu and not torch.cuda.is_available():
        print("throughput.py: no CUDA GPU here (use --cpu for a smoke run)", file=sys.stderr)
        return 2
    device = torch.device("cpu") if args.cpu else torch.device("cuda", 0)
    variants = ["bare", "ours"] + (["lightning"] if _lightning() is not None else [])
    if "lightning" not in variants:
        print("# Lightning does not import here: left out", file=sys.stderr)
    rows: List[Dict[str, Any]] = []
    signal.signal(signal.SIGTERM, _stop)
    stopped = False
    try:
        measure(args.reps, "cpu" if args.cpu else "gpu", device, variants, rows)
    except Stopped:
        stopped = True
        print(f"# stopped (SIGTERM) after {len(rows)} of {2 * len(WORKLOADS)} rows",
              file=sys.stderr)
    text = table(rows, device, variants, args.reps)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": str(device), "rows": rows, "table": text}, f, indent=1)
    return 124 if stopped else 0


if __name__ == "__main__":
    sys.exit(main())
