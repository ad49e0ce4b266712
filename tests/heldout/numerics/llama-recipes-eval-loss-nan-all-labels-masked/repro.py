import torch
from torch.nn import CrossEntropyLoss
shift_logits = torch.randn([3,5])
shift_labels = torch.tensor([-100,-100,-100],dtype=torch.int64)
loss_fct = CrossEntropyLoss()
loss = loss_fct(shift_logits, shift_labels)
print(loss)
