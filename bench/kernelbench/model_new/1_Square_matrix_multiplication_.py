# KernelBench level 1 1_Square_matrix_multiplication_ (4096 fp32) as a Triton ModelNew, for
# bench/python_candidates.sh. The textbook Triton matmul: tl.dot on fp32 tiles, which Triton
# runs on tensor cores in TF32 by default (input_precision="tf32"). That is what most published
# Triton matmuls do, and an fp32 problem's accuracy check is expected to reject it.
import torch
import triton
import triton.language as tl


@triton.jit
def _matmul(a_ptr, b_ptr, c_ptr, n, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, n, BK):
        a = tl.load(a_ptr + rm[:, None] * n + (k + rk)[None, :], mask=(rm[:, None] < n) & ((k + rk)[None, :] < n), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * n + rn[None, :], mask=((k + rk)[:, None] < n) & (rn[None, :] < n), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * n + rn[None, :], acc, mask=(rm[:, None] < n) & (rn[None, :] < n))


class ModelNew(torch.nn.Module):
    def forward(self, A, B):
        n = A.shape[0]
        C = torch.empty((n, n), device=A.device, dtype=A.dtype)
        _matmul[(triton.cdiv(n, 128), triton.cdiv(n, 128))](A, B, C, n, BM=128, BN=128, BK=32, num_warps=8, num_stages=3)
        return C
