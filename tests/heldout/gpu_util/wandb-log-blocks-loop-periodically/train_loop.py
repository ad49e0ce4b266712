model.train()
for data in train_loader:
    loss, metrics = model(data)
    loss.backward()  # Optimizer applied in backward hook

    if RANK == 0:
        metrics = {k: v.item() for k, v in metrics.items()}
        # wandb.log(metrics) 
