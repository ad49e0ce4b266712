CUDA_VISIBLE_DEVICES=0,1 python3 -m unittest discover -v -s tests
CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 python3 -m unittest discover -v -s tests
