export CUDA_VISIBLE_DEVICES=0,1,2,3
export TRAIN_FILE=data/wiki.train.raw
export TEST_FILE=data/wiki.test.raw
python run_language_modeling.py \
    --output_dir=output \
    --model_type=roberta \
    --model_name_or_path=roberta-base \
    --do_train \
    --train_data_file=$TRAIN_FILE \
    --do_eval \
    --eval_data_file=$TEST_FILE \
    --mlm \
    --whole_word_mask
