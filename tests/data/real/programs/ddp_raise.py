# A torchrun DDP job (gloo); global rank 1 raises in its forward pass at step 2.
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(torch.nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    x = torch.randn(4, 8)
    if rank == 1 and step == 2:
        x = torch.randn(4, 7)  # a batch of the wrong width reaches rank 1
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
