import os
import time

import torch
import torch.distributed as dist


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")

    print(f"Starting sync on {local_rank}")
    time_start = time.perf_counter()

    dist.barrier(device_ids=[local_rank])
    time_end = time.perf_counter()
    print(f"Completed sync on {local_rank} in {time_end - time_start:.2f} seconds")

    dist.destroy_process_group()


# torchrun --nproc_per_node=2 --standalone nccl_sync.py
if __name__ == "__main__":
    main()
