import torch
import warnings


def fn():
    warnings.warn("aaa")

def repro():
    compiled_fn = torch.compile(fn)
    compiled_fn()

repro()
