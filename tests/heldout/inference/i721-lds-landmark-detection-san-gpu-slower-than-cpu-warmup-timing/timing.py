    t1 = time.time()
    batch_heatmaps, batch_locs, batch_scos, _ = net(inputs)
    t2 = time.time()
    t = t2 - t1
    print('{:0.5f}s'.format(t))
