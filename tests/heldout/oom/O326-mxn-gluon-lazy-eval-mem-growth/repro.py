for data, label in self.base.train:
  print(label, end=" ")
  # moving datas and labels in the net's context
  data = data.as_in_context(ctx)
  label = label.as_in_context(ctx)
  # computing forward pass in the autograd environement (for gradient computation)
  with autograd.record():
    output = net(data)
    loss = scel(output, label)
    # loss back-propagation
  loss.backward()
  # trainer update
  trainer.step(data.shape[0])
  # ndarray.waitall()
