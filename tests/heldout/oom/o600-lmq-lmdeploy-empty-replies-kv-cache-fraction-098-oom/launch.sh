lmdeploy serve api_server internlm/internlm2_5-7b-chat --server-port 23333 --api-keys YOUR_API_KEY --cache-max-entry-count 0.98 --model-name internlm2.5-7b-chat --session-len 16384
