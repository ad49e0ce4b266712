inference_tasks = [self.model.remote(prompt) for prompt in prompts] # prompts with length 140 
inference_results = await asyncio.gather(*inference_tasks)
