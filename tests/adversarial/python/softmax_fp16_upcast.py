# kforge-adversarial: problem=softmax expect=tolerance case=large_logits
# Computes in half precision and upcasts: 10-bit mantissas are far outside the float
# tolerance where logits are large.
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x.half(), dim=-1).float()
