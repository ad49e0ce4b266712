from unsloth import FastModel
model, tokenizer = FastModel.from_pretrained(
    model_name="unsloth/gemma-4-31B-it-unsloth-bnb-4bit",
    max_seq_length=2048,
    load_in_4bit=True,
    use_gradient_checkpointing="unsloth",
)
model = FastModel.get_peft_model(model, r=8, lora_alpha=8, lora_dropout=0, bias="none",
    finetune_language_layers=True, finetune_attention_modules=True, finetune_mlp_modules=True,
    use_gradient_checkpointing="unsloth")

from trl import GRPOConfig, GRPOTrainer
args = GRPOConfig(
    per_device_train_batch_size=1, gradient_accumulation_steps=2, num_generations=2,
    max_completion_length=1024, max_steps=10, use_vllm=False,
    importance_sampling_level="sequence", beta=0.0, loss_type="grpo",
    optim="paged_adamw_8bit", bf16=True, output_dir="outputs/test",
)
tr
