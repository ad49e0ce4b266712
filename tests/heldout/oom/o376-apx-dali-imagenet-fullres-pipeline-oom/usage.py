train_loader = DALIGenericIterator(
[dataset.ColorDataset.dali_pipeline(image_dir=args.train_dir,
                                    batch_size=args.batch_size,
                                    num_threads=args.num_workers)],
    ['black', 'color'],
    reader_name='Reader'
)

val_loader = DALIGenericIterator(
    [dataset.ColorDataset.dali_pipeline(image_dir=args.val_dir,
                                        batch_size=args.batch_size,
                                        num_threads=args.num_workers)],
    ['black', 'co
