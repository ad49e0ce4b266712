@jax.partial(jax.jit, static_argnums=(0,))
def dummy_add_fn(dummy, x):
    return x + 1
...
dummy_arg = [0]
real_arg = jnp.zeros((3,))
with jax.profiler.TraceContext("Run 1"):
    dummy_add_fn(dummy_arg, real_arg)  # <- JIT compilation
with jax.profiler.TraceContext("Run 2"):
    dummy_add_fn(dummy_arg, real_arg)  # <- no compilation

dummy_arg = [0]
with jax.profiler.TraceContext("Run 3"):
    dummy_add_fn(dummy_arg, real_arg)  # <- compiles again
