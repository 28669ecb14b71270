# kforge-adversarial: problem=softmax expect=tolerance
# Returns a tensor of its own with the last row still missing and lets a Python thread fill
# that row in once the call has returned, before kforge copies the tensor into its output
# buffer (a copy made after the timer stopped): the row would be work nobody timed. kforge
# keeps the interpreter's lock from the call's return until its copy is enqueued, so the
# thread runs only after the copy: the answer lacks the row and fails tolerance.
import sys
import threading
import time

import torch


def _fill_after_return(caller, y, row):
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        if caller not in sys._current_frames():  # the calling thread has left Python: the call returned
            y[-1].copy_(row)
            return
        time.sleep(0.0001)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.softmax(x, dim=-1)
        row = y[-1].clone()
        y[-1] = 0
        threading.Thread(target=_fill_after_return, args=(threading.get_ident(), y, row), daemon=True).start()
        return y
