.\koboldcpp.exe --model .\xwin-lm-70b-v0.1.Q3_K_M.gguf --usecublas --gpulayers 48 --stream --contextsize 4096
