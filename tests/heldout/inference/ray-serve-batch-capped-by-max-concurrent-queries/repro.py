@serve.batch(max_batch_size=256, batch_wait_timeout_s=5)
async def __call__(self, inputs: list[any]) -> list[any]:
    result = self.model.batch_predict(inputs)
    self.logger.info(f"length called: {len(inputs)}")
    return result
