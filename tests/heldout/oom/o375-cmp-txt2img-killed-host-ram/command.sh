python scripts/txt2img.py --prompt "a photograph of an astronaut riding a horse" --plms
