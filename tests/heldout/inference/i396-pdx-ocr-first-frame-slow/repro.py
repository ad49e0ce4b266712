import paddleocr
ocr = paddleocr.PaddleOCR(lang='korean', use_gpu=True)
results = ocr.ocr($<img_path>)
print(results)
