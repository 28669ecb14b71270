# KernelBench level 1 47_Sum_reduction_over_a_dimension ((128, 4096, 4095), sum over dim 1,
# keepdim) as a Triton ModelNew, for bench/python_candidates.sh: a program per (batch, block of
# columns) adds the 4096 rows in fp32, reading contiguous columns.
import torch
import triton
import triton.language as tl

# kforge: param BLOCK = 512 in {128, 256, 512, 1024}


@triton.jit
def _sum_rows(x_ptr, y_ptr, rows, cols, BLOCK: tl.constexpr):
    b = tl.program_id(1).to(tl.int64)
    col = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = col < cols
    base = b * rows * cols + col
    acc = tl.zeros([BLOCK], tl.float32)
    for r in range(0, rows):
        acc += tl.load(x_ptr + base + r * cols, mask=mask, other=0.0)
    tl.store(y_ptr + b * cols + col, acc, mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        assert self.dim == 1 and x.dim() == 3
        x = x.contiguous()
        batch, rows, cols = x.shape
        y = torch.empty((batch, 1, cols), device=x.device, dtype=x.dtype)
        _sum_rows[(triton.cdiv(cols, BLOCK), batch)](x, y, rows, cols, BLOCK=BLOCK, num_warps=4)
        return y
