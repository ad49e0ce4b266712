export XLA_PYTHON_CLIENT_PREALLOCATE=false
export XLA_PYTHON_CLIENT_ALLOCATOR=platform
export OMP_NUM_THREADS=8
ai-models --debug --num-threads 8 --date 20231201 --time 0000 --input cds --assets grc graphcast
