"""Overhead of PyTorchTrial over a hand-written PyTorch loop.

Both train the same MLP on the same synthetic data with the same optimizer,
batch size and batch count; runs alternate (bare, ours, ours, bare, ...) in one
process so machine noise hits both alike. Ours runs through the real trial
runner (workloads of ``scheduling_unit`` batches, metric reduction and
reporting); only the training operation is timed, as for the bare loop.

    python benchmarks/overhead/run.py [--reps 7] [--workloads W1,W2]
"""

import argparse
import gc
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from model_def import make_dataset, make_model  # noqa: E402

WORKLOADS = {
    # name: (layer sizes, batch size, batches, description)
    "W1": ([32, 64, 10], 8, 2000, "MLP 32-64-10, batch 8, 2,000 batches (overhead-bound)"),
    "W2": ([784, 1024, 1024, 10], 256, 200, "MLP 784-1024-1024-10, batch 256, 200 batches (compute-bound)"),
}


def bare_loop(sizes, batch_size, batches, seed):
    torch.manual_seed(seed)
    model = make_model(sizes)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    loader = torch.utils.data.DataLoader(
        make_dataset(sizes, batch_size, batches), batch_size=batch_size, shuffle=True)
    start = time.perf_counter()
    done = 0
    while done < batches:
        for x, y in loader:
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            done += 1
            if done == batches:
                break
    return time.perf_counter() - start


def determined_trial(sizes, batch_size, batches, seed, tmp):
    from determined.config import Length, validate_config
    from determined.harness import InProcessHost, OpKind, TrialEnv, TrialOp, TrialRunner
    from determined.storage import SharedFSStorageManager

    class TimedHost(InProcessHost):
        def next_operation(self):
            now = time.perf_counter()
            self.marks.append(now)
            return super().next_operation()

    cfg = validate_config({
        "entrypoint": "model_def:MLPTrial",
        "hyperparameters": {"global_batch_size": batch_size, "sizes": sizes, "batches": batches},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": batches}},
    })
    env = TrialEnv(cfg, {"global_batch_size": batch_size, "sizes": sizes, "batches": batches},
                   HERE, trial_seed=seed)
    host = TimedHost([TrialOp(OpKind.TRAIN, Length.from_dict({"batches": batches}))])
    host.marks = []
    TrialRunner(env, host, SharedFSStorageManager(tmp)).run()
    assert host.training[-1][0] == batches
    return host.marks[1] - host.marks[0]  # from handing out Train to asking for the next op


def main():
    import tempfile

    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--workloads", default="W1,W2")
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's own)")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    tmp = tempfile.mkdtemp()
    rows = []
    for name in args.workloads.split(","):
        sizes, bs, n, desc = WORKLOADS[name]
        bare_loop(sizes, bs, min(n, 50), 0)  # warm up both paths
        determined_trial(sizes, bs, min(n, 50), 0, tmp)
        times = {"bare": [], "ours": []}
        for rep in range(args.reps):
            order = ["bare", "ours"] if rep % 2 == 0 else ["ours", "bare"]
            for variant in order:
                gc.collect()  # neither variant pays for the other's garbage
                fn = bare_loop if variant == "bare" else determined_trial
                extra = () if variant == "bare" else (tmp,)
                times[variant].append(fn(sizes, bs, n, rep, *extra))
        bare, ours = statistics.median(times["bare"]), statistics.median(times["ours"])
        rows.append((name, desc, bare, ours, ours / bare))
        print(f"{name}: bare {bare:.3f}s, PyTorchTrial {ours:.3f}s, ratio {ours / bare:.3f}",
              file=sys.stderr)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.reps} interleaved reps (medians)\n")
    print("| workload | bare PyTorch loop | det PyTorchTrial | ratio |")
    print("|---|---|---|---|")
    for name, desc, bare, ours, ratio in rows:
        print(f"| {name}: {desc} | {bare:.3f} s | {ours:.3f} s | {ratio:.3f} |")


if __name__ == "__main__":
    main()
