$ build/bin/llama-server -m /path/to/gemma-2-9b-it.Q4_K_S.gguf -c 8192 -ngl 14 -sp
