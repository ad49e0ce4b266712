# torch v2.2.2
from torchtune.modules.peft.peft_utils import disable_adapter

...

    def test_disable_lora(self, inputs, lora_linear) -> None:
        enabled = lora_linear(inputs)

        with disable_adapter(lora_linear):
            disabled = lora_linear(inputs)

        # passes
        assert not torch.allclose(enabled, disabled, atol=1e-4, rtol=1e-4)

    def test_disable_lora_compiled(self, inputs, lora_linear) -> None:
        with disable_adapter(lora_linear):
            disabled_no_compile = lora_linear(inputs)

        lora_linear = torch.compile(lora_linear)
        enabled = lora_linear(inputs)

        with disable_adapter(lora_linear):
            disabled_compile = lora_linear(inputs)

        # both asserts fail
...
