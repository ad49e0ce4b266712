with module_no_grad([netG_A2B]):
    optimizer_D_A.zero_grad()
    pred_real = normalize_gradient(net_D=netD_A, x=real_A)
    pred_fake = normalize_gradient(net_D=netD_A, x=fake_A.detach())
    loss_D_A = -pred_real.mean() + pred_fake.mean() 
    loss_D_A.backward()
    optimizer_D_A.step()
