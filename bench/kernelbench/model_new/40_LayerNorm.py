# KernelBench level 1 40_LayerNorm ((16, 64, 256, 256) over the last three dimensions) as a
# plain-torch ModelNew, for bench/python_candidates.sh: it calls torch.nn.functional.layer_norm,
# the same library kernel as the reference. It should pass and be no faster than eager, and
# eval's kernel listing should show the call's kernels are PyTorch's (library ATen), not custom.
import torch


class ModelNew(torch.nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = torch.nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x):
        return torch.nn.functional.layer_norm(x, self.ln.normalized_shape, self.ln.weight, self.ln.bias, self.ln.eps)
