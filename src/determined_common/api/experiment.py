"""Experiment helpers of upstream 0.13's ``determined_common.api`` against this master."""

import base64
import io
import os
import random
import sys
import tarfile
from typing import Any, Dict, Optional, Union

from determined_common.api import request


def _packed(model_context: Any) -> bytes:
    """A context as the master takes it (tar.gz bytes) from a directory path, bytes or a
    list of ``{"path", "content"}`` entries."""
    if isinstance(model_context, (bytes, bytearray)):
        return bytes(model_context)
    if isinstance(model_context, (str, os.PathLike)):
        from determined.common.api import pack_context

        return pack_context(os.fspath(model_context))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for entry in model_context:
            content = entry["content"]
            content = base64.b64decode(content) if isinstance(content, str) else content
            info = tarfile.TarInfo(entry["path"])
            info.size = len(content)
            info.mode = entry.get("mode", 0o644)
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def create_experiment(
    master_url: str,
    config: Union[str, Dict[str, Any]],
    model_context: Any,
    template: Optional[str] = None,
    validate_only: bool = False,
    archived: bool = False,
    activate: bool = True,
    additional_body_fields: Optional[Dict[str, Any]] = None,
) -> int:
    """Create an experiment; return its id (``validate_only``: validate, return 0)."""
    if validate_only:
        from determined.config import parse_yaml, validate_config

        validate_config(parse_yaml(config) if isinstance(config, str) else config)
        return 0
    body: Dict[str, Any] = {
        "config": config,
        "model_def": base64.b64encode(_packed(model_context)).decode(),
        "activate": activate,
        **(additional_body_fields or {}),
    }
    if template:
        body["template"] = template
    exp_id = int(request.post(master_url, "experiments", body=body).json()["id"])
    if archived:
        request.post(master_url, f"experiments/{exp_id}/archive")
    return exp_id


def activate_experiment(master_url: str, exp_id: int) -> None:
    request.post(master_url, f"experiments/{exp_id}/activate")


def patch_experiment(master_url: str, exp_id: int, patch_doc: Dict[str, Any]) -> None:
    request.patch(master_url, f"experiments/{exp_id}", body=patch_doc)


def follow_experiment_logs(master_url: str, exp_id: int) -> str:
    """Print the log lines of the experiment's first trial (the lowest id), each once
    and in order, until the experiment ends and that log is read to its end; return
    the experiment's state."""
    from determined.common.api._log_tail import PAGE, follow_experiment

    def page(trial_id: int, after: int) -> Dict[str, Any]:
        return request.get(master_url, f"trials/{trial_id}/logs",
                           params={"after_id": after, "limit": PAGE}).json()

    def emit(line: Dict[str, Any]) -> None:
        sys.stdout.write(str(line.get("line", "")).rstrip("\n") + "\n")
        sys.stdout.flush()

    exp = follow_experiment(lambda: request.get(master_url, f"experiments/{exp_id}").json(),
                            page, emit)
    return str(exp["state"])


def follow_test_experiment_logs(master_url: str, exp_id: int) -> str:
    """As :func:`follow_experiment_logs`; print the test-mode verdict; return the state."""
    state = follow_experiment_logs(master_url, exp_id)
    print("Model definition test succeeded" if state == "COMPLETED"
          else f"Model definition test failed (experiment {exp_id} ended {state})")
    return state


def create_experiment_and_follow_logs(
    master_url: str,
    config: Union[str, Dict[str, Any]],
    model_context: Any,
    template: Optional[str] = None,
    additional_body_fields: Optional[Dict[str, Any]] = None,
    activate: bool = True,
    follow_first_trial_logs: bool = True,
) -> int:
    exp_id = create_experiment(master_url, config, model_context, template,
                               activate=activate, additional_body_fields=additional_body_fields)
    print(f"Created experiment {exp_id}")
    if activate and follow_first_trial_logs:
        follow_experiment_logs(master_url, exp_id)
    return exp_id


def generate_random_hparam_values(hparam_def: Dict[str, Any]) -> Dict[str, Any]:
    """One random sample of a ``hyperparameters`` section."""
    from determined.config import validate_config
    from determined.searcher import sample_hparams

    cfg = validate_config({
        "entrypoint": "model_def:Trial",
        "hyperparameters": {"global_batch_size": 1, **hparam_def},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
    }, source="hyperparameters")
    sample = sample_hparams(cfg["hyperparameters"], random.Random())
    if "global_batch_size" not in hparam_def:
        sample.pop("global_batch_size")
    return sample


def make_test_experiment_config(config: Dict[str, Any]) -> Dict[str, Any]:
    """The test-mode copy of ``config`` (one batch, validate, checkpoint; SPEC 6.2)."""
    from determined.config import test_mode_config

    return test_mode_config(config)


def create_test_experiment_and_follow_logs(
    master_url: str,
    config: Union[str, Dict[str, Any]],
    model_context: Any,
    template: Optional[str] = None,
    additional_body_fields: Optional[Dict[str, Any]] = None,
) -> int:
    from determined.config import parse_yaml

    raw = parse_yaml(config) if isinstance(config, str) else dict(config)
    exp_id = create_experiment(master_url, make_test_experiment_config(raw), model_context,
                               template, additional_body_fields=additional_body_fields)
    print(f"Created test-mode experiment {exp_id}")
    state = follow_test_experiment_logs(master_url, exp_id)
    request.post(master_url, f"experiments/{exp_id}/archive")
    if state != "COMPLETED":
        raise SystemExit(1)
    return exp_id
