python benchmark_image.py --quantization fp8dqrow --compile
