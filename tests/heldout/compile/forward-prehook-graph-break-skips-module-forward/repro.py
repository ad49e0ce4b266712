from typing import Any

import torch
import torch.distributed as dist
import torch.nn as nn
import torch._dynamo

def forward_pre_hook_with_graph_break(module: nn.Module, inp: Any):
    torch._dynamo.graph_break()
    return inp

def forward_pre_hook(module: nn.Module, inp: Any):
    return inp

def run_transformer_1d():
    torch.manual_seed(42)
    model = nn.Transformer().cuda()
    model.register_forward_pre_hook(forward_pre_hook_with_graph_break)
    # model.register_forward_pre_hook(forward_pre_hook)
    model = torch.compile(model)
    src = torch.randn((20, 512, 512), device="cuda")
    tgt = torch.randn((10, 512, 512), device="cuda")
    for _ in range(3):
        out = model(src, tgt).sum()
        out.backward()

if __name__ == "__main__":
    torch.cuda.set_device("cuda:0")
    run_transformer_1d()
