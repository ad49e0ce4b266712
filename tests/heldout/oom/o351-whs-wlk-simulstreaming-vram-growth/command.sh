python whisperlivekit/basic_server.py --host 0.0.0.0 --port 8001 --model medium --model-path /root/.cache/whisper/medium.pt --backend whisper --backend-policy simulstreaming --language zh
