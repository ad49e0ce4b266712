import os
import deepspeed
import torch
import transformers

local_rank = int(os.getenv('LOCAL_RANK', '0'))
world_size = int(os.getenv('WORLD_SIZE', '1'))

ds_config = {
  'train_batch_size': world_size,
  'fp16': {
    'enabled': True
  },
  "zero_optimization": {
    "stage": 3,
  },
}

from transformers.deepspeed import HfDeepSpeedConfig
dschf = HfDeepSpeedConfig(ds_config)
model = transformers.GPT2LMHeadModel.from_pretrained("gpt2")
