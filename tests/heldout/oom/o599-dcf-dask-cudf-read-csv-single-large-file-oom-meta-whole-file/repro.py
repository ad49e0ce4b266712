import dask_cudf
from dask.distributed import Client, wait
from dask_cuda import LocalCUDACluster

def generate_file(output_file,rows=100):
    with open(output_file, 'wb') as f:
        f.write(b'A,B,C,D,E,F,G,H,I,J,K\n')
        f.write(b'22,697,56,0.0,0.0,0.0,0.0,0.0,0.0,0,0\n'*rows)
        f.close()

cluster = LocalCUDACluster(ip='0.0.0.0')
client = Client(cluster)
output_file = 'test.csv'

#generate the test file 
generate_file(output_file,rows=250_000_000)

# reading it using dask_cudf
df = dask_cudf.read_csv(output_file,chunksize='5000 MiB')
