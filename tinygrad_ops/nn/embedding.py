"""`Embedding`: a table of learned vectors, looked up by integer index."""

from .. import functional as F  # noqa: N812 (the PyTorch convention)
from ..creation import default_generator
from ..tensor import DEFAULT_DTYPE
from .module import Module, Parameter


class Embedding(Module):
    """out = weight[indices] with weight of shape (num_embeddings, embedding_dim), drawn
    from N(0, 1) as PyTorch's (row `padding_idx`, if given, starts at zeros and gets no
    gradient).

    >>> import tinygrad_ops as tg
    >>> table = tg.nn.Embedding(10, 3)
    >>> table(tg.tensor([[1, 2], [4, 9]])).shape
    (2, 2, 3)
    """

    def __init__(
        self, num_embeddings, embedding_dim, padding_idx=None, dtype=DEFAULT_DTYPE, generator=None
    ):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        generator = default_generator() if generator is None else generator
        weight = generator.standard_normal((num_embeddings, embedding_dim)).astype(dtype)
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(
                    f"Embedding: padding_idx {padding_idx} is out of range for "
                    f"{num_embeddings} embeddings"
                )
            padding_idx %= num_embeddings
            weight[padding_idx] = 0
        self.padding_idx = padding_idx
        self.weight = Parameter(weight)

    def forward(self, indices):
        return F.embedding(indices, self.weight, self.padding_idx)

    def extra_repr(self):
        padding = f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return f"{self.num_embeddings}, {self.embedding_dim}{padding}"


__all__ = ["Embedding"]
