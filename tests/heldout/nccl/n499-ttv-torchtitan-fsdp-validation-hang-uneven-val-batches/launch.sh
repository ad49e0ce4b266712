CONFIG_FILE="./torchtitan/models/llama3/train_configs/llama3_8b.toml" NGPU=2 ./run_train.sh
