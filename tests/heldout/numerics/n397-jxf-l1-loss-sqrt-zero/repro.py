from deepmd_jax.train import train

train(
      model_type='energy', 
      rcut=6.0,
      save_path='model.pkl', 
      train_data_path=[
        '../dataset/data.extxyz',
      ], 
      step=2000000, 
      print_loss_smoothing = 1,
      print_every = 1,
      compress=True,
      #loss = "l2",
)
