from PIL import Image
import torch
import urllib.request
import os

from diffusers import StableDiffusionImg2ImgPipeline
from diffusers.pipelines.stable_diffusion.pipeline_stable_diffusion_img2img import preprocess


image_file = urllib.request.urlopen("https://upload.wikimedia.org/wikipedia/commons/3/32/A_photograph_of_an_astronaut_riding_a_horse_2022-08-28.png")
init_image = Image.open(image_file)

up_size = (2048, 2048)
upsampled_image = init_image.resize(up_size, Image.Resampling.BILINEAR)
pipe = StableDiffusionImg2ImgPipeline.from_pretrained("runwayml/stable-diffusion-v1-5", torch_dtype=torch.float32)
pipe.enable_xformers_memory_efficient_attention()
device = "cuda"

with torch.no_grad():
    vae = pipe.vae.to(device)
    vae.disable_tiling()
    preprocessed = preprocess(upsampled_image).to(torch.float32).to(device)
