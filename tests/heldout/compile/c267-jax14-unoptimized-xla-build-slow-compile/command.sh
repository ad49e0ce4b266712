python3 build/build.py --enable_cuda --cuda_path /usr/local/cuda-10.0/ --enable_march_native
