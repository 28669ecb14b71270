# kforge-adversarial: problem=softmax_small expect=side_stream
# Runs its softmax on a stream of its own and makes the call's stream wait for it: the answer
# is right and ordered, but work off args->stream is outside what kforge's events time on
# another device's schedule, so kforge's contract forbids it (CUPTI sees the launch).
import torch


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.side = None

    def forward(self, x):
        if self.side is None:
            self.side = torch.cuda.Stream()
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            y = torch.softmax(x, dim=-1)
        torch.cuda.current_stream().wait_stream(self.side)
        return y
