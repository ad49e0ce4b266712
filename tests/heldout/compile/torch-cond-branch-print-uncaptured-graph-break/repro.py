import torch

class SubThen(torch.nn.Module):
    def forward(self, x):
        return x * x

class SubElse(torch.nn.Module):
    def forward(self, x):
        print(x)
        return torch.abs(x)

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.sub_then = SubThen()
        self.sub_else = SubElse()

    def forward(self, x):
        return torch.cond(x.sum() > 0, self.sub_then, self.sub_else, [x])

model = Model()
model(torch.rand((5, 4)))
