@pipeline_def(device_id=0)
def dali_pipeline(image_dir, do_transform=True):
    images, _ = fn.readers.file(file_root=image_dir, 
                                     file_list=image_dir+"/labels.txt",
                                     random_shuffle=True, 
                                     name="Reader")
    
    images = fn.decoders.image(images, device="mixed", output_type=types.RGB)
    images = fn.python_function(images, function=rgb2lab)

    if do_transform:
        images = fn.resize(images, size=(320, 240))

    images = fn.transpose(images, perm=[2, 0, 1])
    
    color = images[1:, :, :]
    black = fn.expand_dims(images[0, :, :], axes=0)

    return black, color
