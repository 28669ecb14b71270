# A KernelBench-format module that writes to its input (relu_ returns x itself): on the
# GPU-resident path it runs on the judge's exchange, and must not change what a candidate sees.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu_(x)


def get_inputs():
    return [torch.randn(64, 1000)]


def get_init_inputs():
    return []
