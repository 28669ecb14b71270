# kforge-adversarial: problem=softmax expect=crashed
# Behaves in its build (where the interpreter runs kforge_candidate.py as a program, "build" on
# its argv) and aborts the process when a worker loads it, before its first call: the verdict
# must say it crashed while loading, and the evaluation must not fall over for lack of a place
# to put it (no call had started).
import os
import sys

import torch

if "build" not in sys.argv:
    os.abort()


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
