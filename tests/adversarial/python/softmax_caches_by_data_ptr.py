# kforge-adversarial: problem=softmax expect=tolerance
# Computes once per input address and replays the answer: kforge fills the same buffers with
# other trials' inputs, so a replayed answer is another trial's.
import torch


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x):
        key = x.data_ptr()
        if key not in self.cache:
            self.cache[key] = torch.softmax(x, dim=-1).clone()
        return self.cache[key]
