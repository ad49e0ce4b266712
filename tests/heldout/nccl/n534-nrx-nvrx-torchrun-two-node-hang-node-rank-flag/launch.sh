torchrun --nproc_per_node=8 --nnodes=2 --node_rank=0 --rdzv_id=61 --rdzv_backend=c10d --rdzv_endpoint=$(hostname) /nvidia-resiliency-ext/examples/checkpointing/async_writer.py
