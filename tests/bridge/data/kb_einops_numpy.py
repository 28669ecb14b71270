# KernelBench level 3 style: a file that imports numpy and einops besides torch (as
# 30_SwinTransformerV2 and the Mamba2 files do), with an inert Dropout(p=0.0).
import numpy as np
import torch
import torch.nn as nn
from einops import rearrange


class Model(nn.Module):
    def __init__(self, heads):
        super().__init__()
        self.heads = heads
        self.scale = float(np.sqrt(1.0 / heads))
        self.drop = nn.Dropout(0.0)

    def forward(self, x):
        y = rearrange(x, "b (h d) -> b h d", h=self.heads)
        return self.drop(rearrange(y * self.scale, "b h d -> b (d h)"))


def get_inputs():
    return [torch.randn(8, 64)]


def get_init_inputs():
    return [4]
