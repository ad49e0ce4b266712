ct2-transformers-converter --model EleutherAI/gpt-j-6B --revision float16 --quantization float16 --output_dir gptj_ct2
generator = ctranslate2.Generator("gptj_ct2")
