# KernelBench level 1 3_Batched_matrix_multiplication ((128, 512, 1024) x (128, 1024, 2048)) as
# a ModelNew that turns on TF32 for its own bmm, the commonest "free speedup" in published
# ModelNew files. Expected verdict: tolerance (TF32 keeps 10 mantissa bits; kforge judges against
# a float64 oracle with the fp32 reference's own error as the yardstick), like 1_Square's tl.dot.
import torch


class ModelNew(torch.nn.Module):
    def forward(self, A, B):
        torch.backends.cuda.matmul.allow_tf32 = True
        return torch.bmm(A, B)
