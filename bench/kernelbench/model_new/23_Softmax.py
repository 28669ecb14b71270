# KernelBench level 1 23_Softmax (4096 x 393216) as a Triton ModelNew, for
# bench/python_candidates.sh: one program per row, an online max and sum over the row in blocks,
# then a second pass writing the outputs.
import torch
import triton
import triton.language as tl

# kforge: param BLOCK = 8192 in {2048, 4096, 8192}


@triton.jit
def _softmax(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * cols
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + offs, mask=offs < cols, other=-float("inf"))
        m_new = tl.maximum(m, x)
        safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp(m - safe) + tl.exp(x - safe)
        m = m_new
    row_max = tl.max(m, axis=0)
    inv = 1.0 / tl.sum(s * tl.exp(m - row_max), axis=0)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0)
        tl.store(y_ptr + base + offs, tl.exp(x - row_max) * inv, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _softmax[(x.shape[0],)](x, y, x.shape[1], BLOCK=BLOCK, num_warps=16)
        return y
