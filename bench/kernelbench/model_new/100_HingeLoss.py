# KernelBench level 1 100_HingeLoss: mean(clamp(1 - p * t, 0)) with p (32768, 32768) and t
# (32768,) broadcast along the last dimension (KernelBench's shapes: every row uses the same
# targets), in plain torch with relu for the clamp. Expected verdict: passed, about eager.
import torch


class ModelNew(torch.nn.Module):
    def forward(self, predictions, targets):
        return torch.relu(1 - predictions * targets).mean()
