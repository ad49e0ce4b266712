@qjit
@qml.qnode(qml.device(backend, wires=1))
def circuit(x):
    @cond(x > 4 or True)
    def cond_fn():
        qml.PauliX(wires=0)

    cond_fn()

    return measure(wires=0)

circuit(2) 
