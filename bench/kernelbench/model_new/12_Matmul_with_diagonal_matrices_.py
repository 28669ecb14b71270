# KernelBench level 1 12_Matmul_with_diagonal_matrices_ (diag(A) @ B, A (4096,), B (4096, 4096))
# as a Triton row-scaling kernel: one program per block of a row, the row's diagonal entry
# loaded once. Expected verdict: passed; memory-bound like the reference's broadcast multiply,
# so near 1x.
import torch
import triton
import triton.language as tl


@triton.jit
def scale_rows(a_ptr, b_ptr, c_ptr, M, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < M
    a = tl.load(a_ptr + row)
    b = tl.load(b_ptr + row * M + cols, mask=mask)
    tl.store(c_ptr + row * M + cols, a * b, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, A, B):
        B = B.contiguous()
        C = torch.empty_like(B)
        N, M = B.shape
        BLOCK = 1024
        scale_rows[(N, triton.cdiv(M, BLOCK))](A, B, C, M, BLOCK=BLOCK)
        return C
