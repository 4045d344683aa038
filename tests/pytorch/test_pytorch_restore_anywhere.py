"""A checkpoint written on a GPU restores on the CPU (and the reverse, tested on a GPU in
tests/gpu). A GPU checkpoint is made here by saving a real one again with its tensors
tagged ``cuda:0`` (what ``torch.save`` records for GPU tensors) and a CUDA random state
added: ``torch.load`` refuses such a file on a machine without CUDA unless told where
to map it."""

import os

import pytest
import torch

from test_pytorch_resume import assert_same, run, state

pytestmark = pytest.mark.timeout(600)


def rewrite_as_if_from_gpu(checkpoint_dir, monkeypatch):
    file = os.path.join(checkpoint_dir, "state_dict.pth")
    saved = torch.load(file, weights_only=False)
    saved["rng_state"]["cuda"] = [torch.ByteTensor(16).fill_(7)]  # one GPU's generator state
    with monkeypatch.context() as m:
        m.setattr(torch.serialization, "location_tag", lambda storage: "cuda:0")
        torch.save(saved, file)
    return saved


def test_simulated_gpu_checkpoint_needs_a_map_location_in_plain_torch(tiny_dir, tmp_path, monkeypatch):
    first = run(tiny_dir, tmp_path, "train:10,checkpoint")
    path = os.path.join(first["storage"], first["checkpoints"][-1][1])
    rewrite_as_if_from_gpu(path, monkeypatch)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA"):
            torch.load(os.path.join(path, "state_dict.pth"), weights_only=False)


def test_gpu_checkpoint_loads_on_the_cpu_through_the_sdk_with_map_location(
        tiny_dir, tmp_path, monkeypatch):
    from determined.experimental import Checkpoint

    first = run(tiny_dir, tmp_path, "train:20,checkpoint")
    path = os.path.join(first["storage"], first["checkpoints"][-1][1])
    saved = rewrite_as_if_from_gpu(path, monkeypatch)
    seen = []

    def where(storage, location):
        seen.append(location)
        return storage

    trial = Checkpoint.load_from_path(path, map_location=where)
    assert seen and set(seen) == {"cuda:0"}  # the kwargs reached torch.load
    for name, value in trial.context.models[0].state_dict().items():
        assert torch.equal(value, saved["models_state_dict"][0][name]), name
    # map_location naming a device also builds the model there; the default is this
    # machine's device.
    for kwargs in ({"map_location": "cpu"}, {}):
        model = Checkpoint.load_from_path(path, **kwargs).context.models[0]
        assert next(model.parameters()).device.type == ("cpu" if kwargs or not torch.cuda.is_available()
                                                        else "cuda")


def test_resume_from_a_gpu_checkpoint_on_the_cpu_continues_exactly(tiny_dir, tmp_path, monkeypatch):
    first = run(tiny_dir, tmp_path, "train:30,checkpoint")
    path = os.path.join(first["storage"], first["checkpoints"][-1][1])
    rewrite_as_if_from_gpu(path, monkeypatch)
    resumed = run(tiny_dir, tmp_path, "train:60", "--restore", path)
    straight = run(tiny_dir, tmp_path, "train:60")
    assert_same(state(tmp_path, resumed["checkpoints"][-1][1]),
                state(tmp_path, straight["checkpoints"][-1][1]))
    resumed_losses = [m["loss"] for _, w in resumed["training"] for m in w["batch_metrics"]]
    straight_losses = [m["loss"] for _, w in straight["training"] for m in w["batch_metrics"]]
    assert resumed_losses == straight_losses[30:]


def test_cuda_states_are_set_as_cpu_byte_tensors_for_the_visible_gpus(monkeypatch):
    from determined.pytorch._controller import restore_rng_state

    calls = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_rng_state",
                        lambda s, device: calls.append((s.device.type, s.dtype, device)))
    # Saved on a two-GPU machine, restored where one GPU is visible.
    restore_rng_state({"cuda": [torch.ByteTensor(8), torch.ByteTensor(8)]})
    assert calls == [("cpu", torch.uint8, 0)]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    restore_rng_state({"cuda": [torch.ByteTensor(8)]})  # no GPU: left out, no error
    assert len(calls) == 1
