deepspeed --num_gpus=4 finetune_llama.py --model_name Qwen/Qwen2.5-14B --output_dir output --lr 2e-5 --batch_size 8 --deepspeed_config zo_config.json --num_train_epochs 1
