import torch
import torchvision.models
import lovely_tensors


def main():
    print(torch.__version__)
    print(lovely_tensors.__version__)

    torch._logging.set_logs(graph_breaks=True)
    lovely_tensors.monkey_patch()

    model = torchvision.models.vit_b_16()
    model.cuda()

    x = torch.randn(256, 3, 224, 224, device="cuda")
    y = torch.compile(model)(x)
    print(y.shape)


if __name__ == "__main__":
    main()
