import jax.numpy as np
import jax

def f(x):
    ri = np.expand_dims(x, 0)
    rj = np.expand_dims(x, 1)
    dxdydz = np.power(ri - rj, 2)
    dij = np.sqrt(np.sum(dxdydz, axis=-1))

    keep_mask = 1 - np.eye(x.shape[0]) # keep everything except diagonals
    dij = np.where(keep_mask, dij, np.zeros_like(dij))
    eij = np.where(keep_mask, 1/dij, np.zeros_like(dij))
    return np.sum(eij)

x = np.array([
    [1.0, 2.0, 3.0],
    [0.2, 4.0, 6.0]
])

print(f(x))
df = jax.grad(f, argnums=(0,))
print(df(x)) # nans depending on version
