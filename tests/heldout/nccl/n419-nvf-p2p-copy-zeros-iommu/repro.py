import torch
x = torch.tensor([1], device=0)
>tensor([1], device='cuda:0')
    
x.to(1)
>tensor([0], device='cuda:1')

x = torch.tensor([1.0, 2.0], device=0)
x.to(1)
> tensor([1.4013e-45, 0.0000e+00], device='cuda:1')
x.to('cpu').to(1)
> tensor([1., 2.], device='cuda:1')
