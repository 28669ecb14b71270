# kforge-adversarial: problem=softmax_small expect=tolerance
# A Triton softmax that computes only the first half of the rows and leaves the rest zero:
# copied into kforge's poisoned buffer, the zero half is judged like any wrong answer (the
# poison is gone: a returned tensor is always copied whole, so "unwritten" cannot tell).
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=m, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=m)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.zeros_like(x)
        rows, cols = x.shape
        _softmax[(rows // 2,)](x, y, cols, BLOCK=triton.next_power_of_2(cols))
        return y
