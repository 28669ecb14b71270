# KernelBench level 1 88_MinGPTNewGelu as a Triton ModelNew, for bench/python_candidates.sh: one
# elementwise pass with 64-bit offsets (level 1 tensors reach 1.6e9 elements).
import torch
import triton
import triton.language as tl

# kforge: param BLOCK = 4096 in {1024, 2048, 4096, 8192}


@triton.jit
def _kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    # tanh(u) = 1 - 2 / (exp(2u) + 1): exact at both ends (exp overflows to inf, giving 1)
    y = 0.5 * x * (2.0 - 2.0 / (tl.exp(2.0 * u) + 1.0))
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=8)
        return y
