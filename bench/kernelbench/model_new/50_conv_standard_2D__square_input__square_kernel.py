# KernelBench level 1 50_conv_standard_2D (AlexNet's conv1 on a batch of 256) as a ModelNew that
# asks cuDNN to benchmark its algorithms (the search runs in the build's first call) and runs in
# channels-last. Parameters are loaded by name, so the layer is called conv1 as in the reference.
# Expected verdict: passed; the speedup, if any, is cuDNN's choice of algorithm.
import torch


class ModelNew(torch.nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(in_channels=3, out_channels=96, kernel_size=11, stride=4, padding=2)

    def forward(self, x):
        torch.backends.cudnn.benchmark = True
        y = self.conv1(x.contiguous(memory_format=torch.channels_last))
        return y.contiguous()
