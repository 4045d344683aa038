"""Run trials in-process for tests."""

import os

from determined.config import Length, load_config, validate_config
from determined.harness import InProcessHost, OpKind, TrialEnv, TrialOp, TrialRunner
from determined.storage import SharedFSStorageManager


def make_env(model_dir, config_file="const.yaml", entrypoint=None, hparams=None, overrides=None,
             seed=1, restore=None) -> TrialEnv:
    raw = load_config(os.path.join(model_dir, config_file))
    if entrypoint:
        raw["entrypoint"] = entrypoint
    raw.update(overrides or {})
    cfg = validate_config(raw)
    hp = {k: v["val"] for k, v in cfg["hyperparameters"].items() if v.get("type") == "const"}
    hp.update(hparams or {})
    return TrialEnv(cfg, hp, str(model_dir), trial_id=1, trial_seed=seed, latest_checkpoint=restore)


def train_plan(*batches: int, validate_each: bool = True):
    ops = []
    for b in batches:
        ops.append(TrialOp(OpKind.TRAIN, Length.from_dict({"batches": b})))
        if validate_each:
            ops.append(TrialOp(OpKind.VALIDATE))
    return ops


def run_trial(env: TrialEnv, ops, storage_dir, smaller_is_better=True, **host_kwargs):
    host = InProcessHost(ops, smaller_is_better=smaller_is_better, **host_kwargs)
    storage = SharedFSStorageManager(str(storage_dir))
    runner = TrialRunner(env, host, storage)
    reason = runner.run()
    return host, storage, reason
