import tensorflow as tf
 
 sample = tf.random.normal(shape=(32, 32, 3)) 
 model = tf.keras.applications.ResNet50(input_shape=(32, 32, 3), include_top=False)
 print(model(sample[tf.newaxis, ...]))
