import jax

def f(x):
    return jax.numpy.piecewise(x, [x<0,0<x<1], [-x, x])

f_jit=jax.jit(f)

f(0.5) # 0.5
f_jit(0.5) # Error
