import torch
from enformer_pytorch import from_pretrained

enformer = from_pretrained('EleutherAI/enformer-official-rough').to("cuda")
seq = torch.randint(0, 5, (1, 196_608), device=enformer.device)

enformer(seq)
