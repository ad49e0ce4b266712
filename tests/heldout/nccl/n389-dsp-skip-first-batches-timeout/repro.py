skipped_dataloader = accelerator.skip_first_batches(dataloader, num_batches=500000)

for input, target in skipped_dataloader: 
