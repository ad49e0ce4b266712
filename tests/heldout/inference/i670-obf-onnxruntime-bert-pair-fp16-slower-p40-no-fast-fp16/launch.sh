# conver to onnx model
python -m transformers.convert_graph_to_onnx --framework pt --model $input_model $output_model_path --pipeline sentiment-analysis

# optmized for bert model
python -m onnxruntime_tools.optimizer_cli \
       --input $output_model_path \
       --output $opt_output_model_path \
       --model_type bert \
       --hidden_size 1024 \
       --num_heads 16 \
       --use_gpu \
       --float16
