from transformers import AutoModelForCausalLM, AutoTokenizer

pretrained_model_dir = 'tiiuae/falcon-7b-instruct'
tokenizer = AutoTokenizer.from_pretrained(pretrained_model_dir, use_fast=True)

model = AutoModelForCausalLM.from_pretrained(pretrained_model_dir, load_in_4bit=True, torch_dtype=torch.float16, device_map = "auto", trust_remote_code=True)
model.eval()

inputs = tokenizer("Write a letter to OpenAI CEO Sam Altman as to why GPT3 model should be open-sourced. ", return_tensors="pt").to(model.device)
inputs.pop('token_type_ids')
outputs = model.generate(**inputs, 
                        num_beams=5,
                        no_repeat_ngram_size=4,
                        max_length=512)
print(f"Output: {tokenizer.batch_decode(outputs, skip_special_tokens=True)[0]}")
