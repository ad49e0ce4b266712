def read_image():
    image_pil = Image.open("image1.jpg").convert("RGB")

PROMPTS = ['light', 'box', 'table', 'chair', 'truck', 'floor',
               'wall', 'object', 'ceiling', 'barrier', 'sign', 'person', 'boxes',
               'obstacle', 'bicycle', 'bench', 'traffic light', 'animal',
               'pole', 'chair', 'container', 'train', 'shipment', 'barrel',
               'cart', 'bus', 'cardboard', 'bottle', 'car']
IMAGES = ['image1', 'image2', 'image3', 'image4', ....]

model = LangSAM()

for img in IMAGES:
    for text in PROMPTS:
        results = model.predict([image], [text_prompt])
    ....
    ....
