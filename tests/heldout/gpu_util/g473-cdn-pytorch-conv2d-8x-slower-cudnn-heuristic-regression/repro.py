import torch
import torch.nn.functional as F
import time
print(torch.__version__)
# prints the following
# 2.5.1+cu124

print("torch.backends.cudnn.deterministic = ", torch.backends.cudnn.deterministic)
print("torch.backends.cuda.matmul.allow_tf32 = ", torch.backends.cuda.matmul.allow_tf32)
print("torch.backends.cudnn.allow_tf32 = ", torch.backends.cudnn.allow_tf32)
print("torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = ", torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction)
# prints the following
# torch.backends.cudnn.deterministic =  False
# torch.backends.cuda.matmul.allow_tf32 =  False
# torch.backends.cudnn.allow_tf32 =  True
# torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction =  True


torch.cuda.synchronize()
myconv_start = time.time()
with torch.no_grad():
    out = F.conv2d(torch.rand(75, 1, 572, 572).cuda(), torch.rand(1, 1, 51, 51).cuda(), padding=0).cpu()
torch.cuda.synchronize()
myconv_time = time.time() - myconv_start
print(f"myconv_time = {myconv_time:0.2f} seconds")
out.shape
# prints the following
