./sd.exe --model sd_xl_turbo_1.0_fp16.safetensors --prompt "a dog" --width 512 --height 512 --steps 1 --output output0.png
