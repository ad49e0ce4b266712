import torch
from transformers import AutoTokenizer, AutoModel, AutoConfig
from accelerate import init_empty_weights, load_checkpoint_and_dispatch, infer_auto_device_map

tokenizer = AutoTokenizer.from_pretrained("THUDM/chatglm-6b", trust_remote_code=True)
config = AutoConfig.from_pretrained("THUDM/chatglm-6b", trust_remote_code=True)

with init_empty_weights():
    model = AutoModel.from_config(config, trust_remote_code=True)

_device_map = infer_auto_device_map(model, max_memory={0: "4GiB", "cpu": "30GiB"})
model = load_checkpoint_and_dispatch(
    model, "THUDM/chatglm-6b",
    #no_split_modul
