import torch
import torch.nn as nn


class Model(nn.Module):
    """Token embedding lookup: out[b, t] = weight[ids[b, t]] with ids int64 [batch, seq] and an
    nn.Embedding table [vocab_size, embed_dim]."""

    def __init__(self, vocab_size: int, embed_dim: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embed(ids)


batch_size = 64
seq_len = 128
vocab_size = 10000
embed_dim = 256


def get_inputs():
    return [torch.randint(0, vocab_size, (batch_size, seq_len), dtype=torch.int64)]


def get_init_inputs():
    return [vocab_size, embed_dim]
