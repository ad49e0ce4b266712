!python main.py \
	--output_dir logs/DINO/R50-MS4 -c config/DINO/DINO_4scale_swin.py --coco_path /content/Chula-ParasiteEgg-11 \
    --pretrain_model_path /content/backbone/checkpoint0011_4scale_swin.pth --num_workers 0 \
	--options dn_scalar=100 embed_init_tgt=TRUE \
	dn_label_coef=1.0 dn_bbox_coef=1.0 use_ema=False \
	dn_box_noise_scale=1.0 backbone_dir=. batch_size=2
