import torch
import logging
import triton

torch._logging.set_logs(graph_breaks=True)

_NUM_ITERATIONS = 20

@torch.compile
def _logging_fn(x, y):
    result = x
    for _ in range(_NUM_ITERATIONS):
        logging.info("Hello")
        result += (x * y)
    return result

# Benchmark
DEVICE = "cuda"
test_x = torch.randn(1000).to(DEVICE).to(torch.float32)
test_y = torch.randn(1000).to(DEVICE).to(torch.float32)
print(f"logging_fn: {triton.testing.do_bench(lambda: _logging_fn(test_x, test_y))}")
