CUDA_VISIBLE_DEVICES=0,1 lmdeploy serve api_server /home/models/InternVL-Chat-V1-5/ --model-name InternVL-Chat-V1-5 --server-port 23333 --tp2
