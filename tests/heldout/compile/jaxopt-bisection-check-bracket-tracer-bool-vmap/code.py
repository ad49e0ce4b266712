def F(x, factor):
  return factor * x ** 3 - x - 2

def root(factor):
  bisec = jaxopt.Bisection(optimality_fun=F, lower=1, upper=2)
  return bisec.run(factor=factor).params

print(jax.vmap(root)(jnp.array([2.0, 2.0])))
