import pytensor
import pytensor.tensor as pt
import torch

x = pt.vector('x')
y = x[-1].inc(1)
f = pytensor.function(inputs=[x], outputs=y, mode="PYTORCH")

torch._dynamo.explain(f.vm.jit_fn._fn)(torch.zeros(2)).break_reasons
