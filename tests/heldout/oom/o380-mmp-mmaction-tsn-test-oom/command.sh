python ./tools/test_recognizer.py ./configs/ucf101/tsn_rgb_bninception.py ./data_tools/ucf101/modelzoo/tsn_2d_rgb_bninception_seg3_f1s1_b32_g8-98160339.pth --gpus 1
