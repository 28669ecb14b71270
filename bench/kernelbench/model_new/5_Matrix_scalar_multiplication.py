# KernelBench level 1 5_Matrix_scalar_multiplication (65536 x 16384 times a float) as a Triton
# ModelNew, for bench/python_candidates.sh: forward receives the scalar as a Python number
# (kforge keeps it in a one-element input and reads it at every call).
import torch
import triton
import triton.language as tl


@triton.jit
def _scale(a_ptr, c_ptr, s, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=mask) * s, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, A, s):
        A = A.contiguous()
        C = torch.empty_like(A)
        n = A.numel()
        _scale[(triton.cdiv(n, 4096),)](A, C, s, n, BLOCK=4096, num_warps=8)
        return C
