python3 -m vllm.entrypoints.openai.api_server --model alpindale/WizardLM-2-8x22B --dtype auto --max-model-len 8192 --gpu-memory-utilization 0.50 --enforce-eager --api-key token-abc123
