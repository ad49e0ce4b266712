export HEAD_IP="192.168.181.24"
docker run --rm --gpus all --network host \
  --privileged --ipc=host -p 8000:8000 \
  --hostname nv-h100-024 \
  --add-host "nv-h100-024:192.168.181.24" \
  --add-host "nv-h100-030:192.168.181.30" \
  -v ~/.cache/huggingface:/root/.cache/huggingface \
  -v /root/DeepSeek-V4/DeepSeek-V4-Pro-0813:/model/DeepSeek-V4-Pro \
  -e VLLM_ENGINE_READY_TIMEOUT_S=3600 \
  -e VLLM_LOGGING_LEVE
