# kforge-adversarial: problem=softmax expect=tolerance
# Returns its input: copied into kforge's output buffer, it is the input, not the softmax.
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x
