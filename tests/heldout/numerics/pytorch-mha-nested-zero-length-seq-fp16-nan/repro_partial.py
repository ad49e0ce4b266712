import torch
import random
import numpy as np

import warnings

warnings.filterwarnings("ignore")

@torch.inference_mode()
def main():
    random.seed(42)
    torch.manual_seed(42)
    np.random.seed(42)

    a, b = 1, 0.8
    batch_size = 128
    sequence_length = 128
    block_size = 32
    embed_dim = 1024
    num_heads = 16
    device = "cuda"
    dtype = torch.float16

    from scipy.stats import beta
    # lengths is ultimately just a list of numbers in the range [0,sequence_length] where each number is a multiple of block_size
    lengths = beta.rvs(a, b, size=batch_size) * (sequence_length + block_size) // block_size
    lengths_in_blocks = list(map(int, list(lengths)))
    lengths = [l * block_size for l in lengths_in_blocks]

    # Create q,k,v
    q = [torch.randn(l, embed_dim, device=device, dtype=dtype)for l in lengths]
    q = torch.nested_tensor(q, device=device, dtype=dtype)
    k, v = q, q

    qkv = torch.nn.Linear(embed_dim, 3 * embed_dim, device=device, dtype=dtype)
