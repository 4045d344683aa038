"""Run one trial as the chief of ``--slots`` processes and print what happened as JSON.

    python tests/pytorch/dist_script.py MODEL_DIR CONFIG.yaml STORAGE_DIR OPS [--slots N]
        [--restore PATH] [--entrypoint E] [--hparams JSON] [--data JSON] [--optimizations JSON]

OPS is a comma list of train:<batches>, validate, checkpoint (close is implied).
The other ranks are started by ``determined.harness._ranks`` as in a real run.
"""

import argparse
import json
import os
import sys


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("model_dir")
    p.add_argument("config")
    p.add_argument("storage_dir")
    p.add_argument("ops")
    p.add_argument("--slots", type=int, default=2)
    p.add_argument("--restore", default=None)
    p.add_argument("--entrypoint", default=None)
    p.add_argument("--hparams", default=None)
    p.add_argument("--data", default=None)
    p.add_argument("--optimizations", default=None)
    p.add_argument("--seed", type=int, default=1234)
    args = p.parse_args()

    from determined.config import Length, load_config, validate_config
    from determined.harness import InProcessHost, OpKind, TrialEnv, TrialOp, TrialRunner
    from determined.harness._ranks import distributed_trial

    raw = load_config(args.config)
    raw["resources"] = {"slots_per_trial": args.slots}
    if args.entrypoint:
        raw["entrypoint"] = args.entrypoint
    if args.data:
        raw["data"] = json.loads(args.data)
    if args.optimizations:
        raw["optimizations"] = json.loads(args.optimizations)
    cfg = validate_config(raw)
    hparams = {k: v["val"] for k, v in cfg["hyperparameters"].items() if v.get("type") == "const"}
    if args.hparams:
        hparams.update(json.loads(args.hparams))
    ops = []
    for item in args.ops.split(","):
        if item.startswith("train:"):
            ops.append(TrialOp(OpKind.TRAIN, Length.from_dict({"batches": int(item[6:])})))
        elif item == "validate":
            ops.append(TrialOp(OpKind.VALIDATE))
        elif item == "checkpoint":
            ops.append(TrialOp(OpKind.CHECKPOINT))
    env = TrialEnv(cfg, hparams, os.path.abspath(args.model_dir), trial_id=1, trial_seed=args.seed,
                   latest_checkpoint=args.restore)
    host = InProcessHost(ops, smaller_is_better=cfg["searcher"]["smaller_is_better"])
    storage_config = {"type": "shared_fs", "host_path": os.path.abspath(args.storage_dir)}
    from determined.storage import build_storage

    os.chdir(args.model_dir)
    with distributed_trial(env, storage_config, threads=1) as env:
        storage = build_storage(storage_config)
        TrialRunner(env, host, storage).run()
    json.dump({
        "training": host.training,
        "validations": host.validations,
        "checkpoints": [[b, u] for b, u, _ in host.checkpoints],
        "storage": storage.root,
    }, sys.stdout)


if __name__ == "__main__":
    main()
