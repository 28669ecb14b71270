# A KernelBench-format file whose get_inputs() draws 256 GiB: more than any machine kforge runs
# on holds. The importer learns its shapes on the meta device and imports it without drawing.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x)


def get_inputs():
    return [torch.randn(1 << 20, 1 << 16)]


def get_init_inputs():
    return []
