python3 -m torch.distributed.launch --nproc_per_node=4 --master_port 6666 train.py hparams/sepformer-whamr-16k-DM.yaml --data_folder /workspace/cpfs-data/Workstations/speechbrain/recipes/WHAMandWHAMR/data/whamr --base_folder_dm /workspace/cpfs-data/Data/wham/wsj0/si_tr_s/ --rir_path rir_wavs --distributed_launch --distributed_backend='nccl'

python3 train.py hparams/sepformer-whamr-16k-DM.yaml --data_folder /workspace/cpfs-data/Workstations/speechbrain/recipes/WHAMandWHAMR/data/whamr --base_folder_dm /workspace/cpfs-data/Data/wham/wsj0/si_tr_s/ --rir_path rir_wavs
