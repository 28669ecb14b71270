# Sleeps in every call, and patches every Python clock and torch.cuda.Event to claim it took no
# time. kforge's timer is the worker's C++ (and CUDA events it made), not Python's: the sleep is
# seen, and a stated impossible time comes only from a clock the candidate cannot reach.
import time

import torch

_sleep = time.sleep
for name in ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "process_time"):
    setattr(time, name, (lambda: 0) if name.endswith("_ns") else (lambda: 0.0))


class _Event:
    def __init__(self, *a, **k):
        pass

    def record(self, *a, **k):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return 0.0


try:
    torch.cuda.Event = _Event
except Exception:
    pass


class ModelNew(torch.nn.Module):
    def forward(self, x):
        _sleep(0.002)
        return torch.softmax(x, dim=-1)
