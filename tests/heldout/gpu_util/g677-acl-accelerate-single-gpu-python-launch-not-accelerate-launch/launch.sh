accelerate config
python my_script.py
