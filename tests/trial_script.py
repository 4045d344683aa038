"""Run one trial in a fresh process and print what happened as JSON.

    python tests/trial_script.py MODEL_DIR CONFIG.yaml STORAGE_DIR OPS [--restore PATH]
        [--entrypoint E] [--hparams JSON] [--seed N]

OPS is a comma list of train:<batches>, validate, checkpoint (close is implied).
Tests use it to prove what survives a process boundary.
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
    p.add_argument("--restore", default=None)
    p.add_argument("--warm", action="store_true")
    p.add_argument("--entrypoint", default=None)
    p.add_argument("--hparams", default=None)
    p.add_argument("--seed", type=int, default=1234)
    args = p.parse_args()

    from determined.config import Length, load_config, validate_config
    from determined.harness import InProcessHost, OpKind, TrialEnv, TrialOp, TrialRunner
    from determined.storage import SharedFSStorageManager

    raw = load_config(args.config)
    if args.entrypoint:
        raw["entrypoint"] = args.entrypoint
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
                   latest_checkpoint=args.restore, warm_start=args.warm)
    host = InProcessHost(ops, smaller_is_better=cfg["searcher"]["smaller_is_better"])
    storage = SharedFSStorageManager(os.path.abspath(args.storage_dir))
    os.chdir(args.model_dir)
    TrialRunner(env, host, storage).run()
    json.dump({
        "training": host.training,
        "validations": host.validations,
        "checkpoints": [[b, u] for b, u, _ in host.checkpoints],
        "storage": storage.root,
    }, sys.stdout)


if __name__ == "__main__":
    main()
