# kforge-adversarial: problem=softmax expect=unwritten
# Walks the interpreter's objects for a tensor of the output's shape that is not its own input
# (a reference's answer, a truth buffer) and returns it. The candidate's process never holds
# truth: the only such tensor is kforge's own view of the output buffer, which holds poison, and
# the poison copied back is judged unwritten.
import gc

import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        for o in gc.get_objects():
            try:
                if isinstance(o, torch.Tensor) and o.shape == x.shape and o.data_ptr() != x.data_ptr():
                    return o.clone()
            except Exception:
                pass
        return torch.zeros_like(x)
