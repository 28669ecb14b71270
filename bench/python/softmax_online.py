# A Triton softmax for problems/softmax (4096 x 65536 fp32), for bench/python_candidates.sh: one
# program per row, two passes over the row in blocks (an online max and sum, then the outputs),
# so a row of any length streams through registers.
import torch
import triton
import triton.language as tl

# kforge: param BLOCK = 4096 in {1024, 2048, 4096, 8192}
# kforge: param WARPS = 8 in {4, 8, 16}


@triton.jit
def softmax_online(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * cols
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + offs, mask=offs < cols, other=-float("inf"))
        m_new = tl.maximum(m, x)
        # Lanes that have seen only -inf (masked tails) keep s = 0 instead of exp(nan).
        safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp(m - safe) + tl.exp(x - safe)
        m = m_new
    row_max = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(m - row_max), axis=0)
    inv = 1.0 / total
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0)
        tl.store(y_ptr + base + offs, tl.exp(x - row_max) * inv, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        rows, cols = x.shape
        y = torch.empty_like(x)
        softmax_online[(rows,)](x, y, cols, BLOCK=BLOCK, num_warps=WARPS)
        return y
