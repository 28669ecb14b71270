# kforge-adversarial: problem=softmax expect=tolerance
# Returns a view of its input (no new memory): it is copied into kforge's output buffer like
# any returned tensor, and judged as the identity it is.
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x.view(x.shape)[:, :]
