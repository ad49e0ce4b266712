    train_loader = torch.utils.data.DataLoader(train_data, 
        batch_size=batch_size, num_workers=8, pin_memory=True, shuffle=True)
