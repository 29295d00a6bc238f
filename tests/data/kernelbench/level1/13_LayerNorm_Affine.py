import torch
import torch.nn as nn


class Model(nn.Module):
    """LayerNorm over the last dimension with a learned weight and bias (eps 1e-5). The weight
    and bias start away from 1 and 0 so that a kernel ignoring them is caught."""

    def __init__(self, normalized_shape: int):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape, eps=1e-5)
        with torch.no_grad():
            self.ln.weight.normal_(1.0, 0.5)
            self.ln.bias.normal_(0.0, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 256
features = 4096


def get_inputs():
    return [torch.randn(batch_size, features) * 2.0 + 1.0]


def get_init_inputs():
    return [features]
