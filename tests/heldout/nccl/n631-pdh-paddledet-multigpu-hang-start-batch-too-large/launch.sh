python -m paddle.distributed.launch tools/train.py -c configs/ppyoloe/ppyoloe_crn_s_300e_coco.yml --eval
