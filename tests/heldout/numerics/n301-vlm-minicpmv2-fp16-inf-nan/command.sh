CUDA_VISIBLE_DEVICES=0 swift infer --model_type minicpm-v-v2-chat
