import torch
import torch.nn as nn

class Perceptron(nn.Module):
    def __init__(self, input_dim):
        super().__init__()
        self.linear = nn.Linear(input_dim, 1)

    def forward(self, x):
        x = x.clone().requires_grad_(torch.rand(1).item() > 0.5)  #Triggering incorrect code
        return torch.sigmoid(self.linear(x))

model = Perceptron(input_dim=2)
compiled_model = torch.compile(model, fullgraph=True)  #Compilation failed
