python demo/bottom_up_video_demo.py     configs/bottom_up/resnet/coco/res152_coco_512x512.py res152_coco_512x512-364eb38d_20200822.pth     --video-path demo/tabata1_640x360.mp4 --show --device cuda:0
