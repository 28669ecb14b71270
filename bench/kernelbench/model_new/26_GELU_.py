# KernelBench level 1 26_GELU_ as a Triton ModelNew, for bench/python_candidates.sh: one
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
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
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
