python train.py \
--arch ocrnet.HRNet_Mscale \
--lr 5e-3 \
--n_scales "0.5,1.0,2.0" \
--dataset xxx \
--crop_size "480, 960" \
--bs_trn 1 \
--trunk "resnet50"
