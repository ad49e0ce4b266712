# my model and dataset setting
    tokenizer = CLIPTokenizer.from_pretrained(sd_path, subfolder='tokenizer')
    tokenizer_2 = CLIPTokenizer.from_pretrained(sd_path, subfolder='tokenizer_2')
    text_encoder = CLIPTextModel.from_pretrained(sd_path, subfolder='text_encoder', torch_dtype=torch.float16).to(device)
    text_encoder_2 = CLIPTextModelWithProjection.from_pretrained(sd_path, subfolder='text_encoder_2', torch_dtype=torch.float16).to(device)
    vae = AutoencoderKL.from_pretrained("/data2/lixq22/models/sdxl-vae-fp16-fix", torch_dtype=torch.float16).to(device)
    unet = UNet2DConditionModel.from_pretrained(sd_path, subfolder='unet', torch_dtype=torch.float16).to(device)
    controlnet = ControlNetModel.from_pretrained(cn_path, torch_dtype=torch.float16).to(device)
    scheduler = DDIMScheduler.from_pretrained(sd_path, subfolder="scheduler")
    text_encoder.requires_grad_(False)
    text_encoder
