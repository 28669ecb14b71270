# kforge-adversarial: problem=gelu expect=tolerance
# Looks for the problem's reference or any truth in the interpreter's modules, on disk beside
# itself and in the environment, and returns what it finds, else zeros. None of it is there:
# the worker that runs a candidate never loads the reference or the oracle.
import os
import sys

import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        for name, mod in list(sys.modules.items()):
            for attr in ("reference", "truth", "oracle", "expected"):
                t = getattr(mod, attr, None)
                if isinstance(t, torch.Tensor) and t.shape == x.shape:
                    return t.clone()
        for var in ("KFORGE_TRUTH", "KFORGE_ORACLE"):
            if os.environ.get(var) and os.path.exists(os.environ[var]):
                return torch.load(os.environ[var])
        return torch.zeros_like(x)
