# KernelBench level 1 98_KLDivLoss ((16384, 16384), reduction batchmean) written out as
# sum(t * (log t - log p)) / batch in plain torch. Expected verdict: passed; a reduction of a
# 1 GiB product, so near eager's time.
import torch


class ModelNew(torch.nn.Module):
    def forward(self, predictions, targets):
        return (targets * (targets.log() - predictions.log())).sum() / predictions.shape[0]
