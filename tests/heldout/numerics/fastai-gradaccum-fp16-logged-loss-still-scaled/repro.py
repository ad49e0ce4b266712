seed=random.randint(0,2**32-1)

with no_random(seed): 
    db=synth_dbunch(bs=8,n_train=1,n_valid=1,cuda=True)
    learn = synth_learner(data=db)
    learn.fit(1, lr=0.01)
#start without gradient overflow
max_loss_scale=2048.0
with no_random(seed): 
    db=synth_dbunch(bs=1,n_train=8,n_valid=8,cuda=True)
    learn = synth_learner(data=db,cbs=[GradientAccumulation(n_acc=8)])
    learn.to_fp16(max_loss_scale=max_loss_scale)
    learn.fit(1, lr=0.01)
