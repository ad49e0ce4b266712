NCCL_DEBUG=INFO deepspeed --num_gpus 2 script.py
