# KernelBench level 1 36_RMSNorm_ ((112, 64, 512, 512), normalised over dim 1) as a Triton
# ModelNew, for bench/python_candidates.sh: a program per (batch, block of positions) walks the
# 64 features twice (sum of squares, then the scaled outputs), reading contiguous positions.
import torch
import triton
import triton.language as tl

# kforge: param BLOCK = 1024 in {256, 512, 1024, 2048}


@triton.jit
def _rmsnorm(x_ptr, y_ptr, features, plane, eps, BLOCK: tl.constexpr):
    b = tl.program_id(1).to(tl.int64)
    pos = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = pos < plane
    base = b * features * plane + pos
    acc = tl.zeros([BLOCK], tl.float32)
    for f in range(0, features):
        x = tl.load(x_ptr + base + f * plane, mask=mask, other=0.0)
        acc += x * x
    inv = 1.0 / tl.sqrt(acc / features + eps)
    for f in range(0, features):
        x = tl.load(x_ptr + base + f * plane, mask=mask, other=0.0)
        tl.store(y_ptr + base + f * plane, x * inv, mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        batch, features = x.shape[0], x.shape[1]
        plane = x[0, 0].numel()
        _rmsnorm[(triton.cdiv(plane, BLOCK), batch)](x, y, features, plane, self.eps, BLOCK=BLOCK, num_warps=4)
        return y
