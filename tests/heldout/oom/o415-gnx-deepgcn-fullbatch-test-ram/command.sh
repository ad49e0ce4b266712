python test.py --self_loop --num_layers 14 --gcn_aggr softmax_sg --t 0.1
