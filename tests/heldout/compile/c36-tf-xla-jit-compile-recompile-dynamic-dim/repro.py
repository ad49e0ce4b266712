@tf.function(input_signature=[tf.TensorSpec(shape=[2, None], dtype=tf.float32),
                              tf.TensorSpec(shape=[None, 2], dtype=tf.float32),
                              tf.TensorSpec(shape=[], dtype=tf.float32),],
             jit_compile=True)
def foo(x, y, z):
    exp = tf.add(x, z)
    abs = tf.sin(exp)
    add = tf.add(abs, tf.transpose(y, ))
    mm = tf.matmul(add, y)
    return mm

x = tf.ones([2, 3]).gpu()
y = tf.ones([3, 2]).gpu()
z = tf.ones([]).gpu()

out = foo(x, y, z) # Compile

x = tf.ones([2, 4]).gpu()
y = tf.ones([4, 2]).gpu()
z = tf.ones([]).gpu()

out = foo(x, y, z)  # Compile

x = tf.ones([2, 5]).gpu()
y = tf.ones([5, 2]).gpu()
z = tf.ones([]).gpu()

out = foo(x, y, z)  # Compile
