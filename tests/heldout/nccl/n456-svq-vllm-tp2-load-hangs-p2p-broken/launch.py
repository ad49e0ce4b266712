from vllm import LLM
llm = LLM(model="./mistral/models--mistralai--Mistral-7B-Instruct-v0.2/snapshots/", tensor_parallel_size=2)
