CUDA_VISIBLE_DEVICES=0,1,2,3,4,5 swift sft --model /OpenGVLab/InternVL2_5-4B/ --dataset /swift/ocr.jsonl --train_type lora --output_dir output_20250219_02 --num_train_epochs 50
CUDA_VISIBLE_DEVICES=0,1,2,3,4,5 swift sft --model /AIDC-AI/Ovis2-4B/ --dataset /swift/ocr.jsonl --train_type lora --output_dir output_2025026_02 --num_train_epochs 50
