load_piplinev2 = [
    dict(type='loadandAugTest', img_size=640),
    dict(type='DefaultFormatBundle'),
    dict(type='Collect', keys=['img'], meta_keys=()),
]
num_workers = 8
batch_size = 64
tmp_dataset = build_dataset(tmp_data_cfg)
data_loader = build_dataloader(tmp_dataset, batch_size , num_workers, num_gpus=1, dist=False, seed=None)

273/1833 [09:09<55:41,  2.14s/it]
