python detect.py --source 0 --cfg test.cfg --data test.data --weight test.weights --device 0
