"""The NCCL data-parallel path with world size 1 (all one GPU allows), run as its own
process: NCCL process group, ``context.wrap_model`` giving DistributedDataParallel,
pinned batches copied without blocking. Prints JSON; tests/gpu/test_gpu_ddp.py checks it.

    python ddp_script.py TINY_PYTORCH_DIR PORT [cpu]

``cpu`` runs the same code on gloo and the CPU (no pinning), to check the script itself.
"""

import json
import os
import sys

import torch


def main() -> None:
    model_dir, port = sys.argv[1], int(sys.argv[2])
    on_cpu = sys.argv[3:] == ["cpu"]
    from determined.config import load_config, validate_config
    from determined.harness import DistributedInfo, TrialEnv
    from determined.pytorch._collective import TorchCollective
    from determined.pytorch import DataLoader
    from determined.pytorch._context import PyTorchTrialContext, RunState
    from determined.pytorch._data import to_device

    info = DistributedInfo(rank=0, size=1, master_addr="127.0.0.1", master_port=port)
    group = TorchCollective(info)
    cfg = validate_config(load_config(os.path.join(model_dir, "const.yaml")))
    env = TrialEnv(cfg, {"global_batch_size": 64}, model_dir, distributed=info)
    device = torch.device("cpu") if on_cpu else torch.device("cuda", 0)

    def make_model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(),
                                   torch.nn.Linear(256, 10))

    # What the controller passes for a distributed trial on NCCL.
    ctx = PyTorchTrialContext(env, device, run_state=RunState(ddp=True))
    ddp = ctx.wrap_model(make_model())
    opt = ctx.wrap_optimizer(torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9))
    plain = make_model().to(device)
    plain_opt = torch.optim.SGD(plain.parameters(), lr=0.1, momentum=0.9)

    gen = torch.Generator().manual_seed(1)
    x, y = torch.randn(640, 32, generator=gen), torch.randint(0, 10, (640,), generator=gen)
    loader = DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=64, shuffle=True)
    loader._pin_for_device = not on_cpu  # as the controller does on a GPU
    batches = loader.training_iterator(seed=3, start_batch=0)
    pinned = []
    for _ in range(30):
        cpu_batch = next(batches)
        pinned.append(on_cpu or all(t.is_pinned() for t in cpu_batch))
        bx, by = to_device(cpu_batch, device)
        loss = torch.nn.functional.cross_entropy(ddp(bx), by)
        ctx.backward(loss)
        ctx.step_optimizer(opt)
        plain_loss = torch.nn.functional.cross_entropy(plain(bx), by)
        plain_loss.backward()
        plain_opt.step()
        plain_opt.zero_grad()
    if not on_cpu:
        torch.cuda.synchronize()
    same = all(torch.equal(a, b) for a, b in zip(ctx.models[0].state_dict().values(),
                                                 plain.state_dict().values()))
    close = all(torch.allclose(a, b, atol=1e-5) for a, b in zip(ctx.models[0].state_dict().values(),
                                                                 plain.state_dict().values()))
    print(json.dumps({"backend": group.backend, "wrapped": type(ddp).__name__,
                      "pinned": all(pinned), "bit_identical": same, "close": close}))
    group.close()


if __name__ == "__main__":
    main()
