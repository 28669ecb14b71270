# KernelBench level 1 95_CrossEntropyLoss ((32768, 4096) logits, int64 targets) written out as
# logsumexp minus the target's logit, in plain torch: an integer input and a scalar output
# through kforge. Expected verdict: passed, at about eager's speed (the same library reductions).
import torch


class ModelNew(torch.nn.Module):
    def forward(self, predictions, targets):
        picked = predictions.gather(1, targets.unsqueeze(1)).squeeze(1)
        return (torch.logsumexp(predictions, dim=1) - picked).mean()
