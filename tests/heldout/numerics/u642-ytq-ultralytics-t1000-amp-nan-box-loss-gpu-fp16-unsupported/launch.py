 results = model.train(data="segmentdata.yaml", 
                        epochs=100, 
                        imgsz=640                       
 ) 

results = model.train(data="segmentdata.yaml", 
                        epochs=100, 
                        imgsz=640, 
                        amp=False,
                        lr0=0.001,
                        )  
