config = dataclasses.replace(_config.WOD_1_1_0_VALIDATION, max_num_objects=32)
data_iter = dataloader.simulator_state_generator(config=config)

scenario = next(data_iter)
start_time = time.time()

while scenario:
    state = scenario
    for _ in range(scenario.remaining_timesteps):
        state = datatypes.update_state_by_log(state, num_steps=1)
    print("remaining_timesteps: ", scenario.remaining_timesteps)
    scenario = next(data_iter)
    end_time = time.time()
    print("time cost: ", end_time - start_time)
    start_time = end_time
