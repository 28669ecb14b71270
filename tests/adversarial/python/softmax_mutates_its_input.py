# kforge-adversarial: problem=softmax expect=inputs_modified
# Computes the right answer in place in its input and returns that view: kforge's inputs are
# views of its own buffers, so the change is seen.
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x.sub_(x.max(dim=-1, keepdim=True).values).exp_()
        x.div_(x.sum(dim=-1, keepdim=True))
        return x
