export CUDA_VISIBLE_DEVICES=4,5
python matcha/train.py experiment=multispeaker trainer.devices=[0,1]
