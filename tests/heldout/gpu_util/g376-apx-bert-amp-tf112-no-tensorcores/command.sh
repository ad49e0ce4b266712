./run_pretraining.sh 32 8 5e-5 fp32 1, and
./run_pretraining.sh 32 8 5e-5 amp 1
