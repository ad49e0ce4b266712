from torch_geometric.datasets import TUDataset
dblp = TUDataset(root='data/DBLP_v1', name='DBLP_v1')
