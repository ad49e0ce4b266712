start_time = time.time()
everything_result = self.mask_generator(bgr, device='cuda', retina_masks=True, imgsz=self.unify_dim[0], conf=0.1, iou=0.9)
end_time = time.time()
print("FastSAM inference time: ", end_time - start_time)
