# kforge-adversarial: problem=softmax_small expect=inputs_modified
# Computes the softmax in place in its input (a view of kforge's buffer) and returns it.
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x.copy_(torch.softmax(x, dim=-1))
