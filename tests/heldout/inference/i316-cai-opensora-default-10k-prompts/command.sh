python scripts/inference.py configs/opensora-v1-2/inference/sample.py  --image-size 480 853
