import xformers
import xformers.ops
import torch

q = torch.zeros(([1, 33728, 512])).cuda()
k = torch.zeros(([1, 33728, 512])).cuda()
v = torch.zeros(([1, 33728, 512])).cuda()
out = xformers.ops.memory_efficient_attention(q, k, v, attn_bias=None)
print(out)
print(torch.isnan(out).any())
