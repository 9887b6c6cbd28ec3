"""Train a tiny causal transformer (a two-block GPT) to sort digits, eager or under tg.compile.

Read this file top to bottom. The task needs no download: a sequence of six random digits,
a separator, then the same digits sorted, e.g. `3 1 4 1 5 9 | 1 1 3 4 5 9`. The model
reads the sequence left to right and learns to predict each next token; after training
it is given the six digits and the separator and writes the sorted digits itself, one
token at a time (greedy decoding). Run it with

    python examples/tiny_transformer.py                  # eager: 100% sorted exactly
    python examples/tiny_transformer.py --compile        # the same steps under tg.compile
    python examples/tiny_transformer.py --graph tiny.svg # also draw one loss's graph

Its 600 steps (a loss of 0.0014, every one of 1,000 new sequences sorted) took 5.6-6.1 s
eagerly and 3.2-3.9 s compiled on one core of a 2-core machine, and 12-15 s and 6.5-9 s
while that machine was busy (three runs of each, OPENBLAS_NUM_THREADS=1: set it on a busy
machine, where OpenBLAS's extra thread competes with Python's for the cores). Compiled and
eager steps give the same losses.
"""

import argparse
import time

import numpy as np

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import nn, optim

DIGITS = 6  # digits to sort
VOCAB = 10  # the tokens 0-9, and the separator:
SEPARATOR = VOCAB
LENGTH = 2 * DIGITS  # the model reads 13 - 1 tokens: the last one is only ever predicted


# 1. Data: random digits, a separator, the digits sorted. The model's input is the sequence
#    but its last token, the target the sequence shifted by one: position t predicts
#    token t + 1. Only the predictions after the separator (the sorted half) are scored.
def batch(generator, size):
    digits = generator.integers(0, VOCAB, size=(size, DIGITS))
    separator = np.full((size, 1), SEPARATOR)
    sequence = np.concatenate([digits, separator, np.sort(digits, axis=1)], axis=1)
    return sequence[:, :-1], sequence[:, 1:]


def one_hot(tokens):
    """Tokens as one-hot rows: the token embedding below is a Linear layer on them, which is
    what nn.Embedding computes (a row of the weight per token), and tg.compile captures."""
    return tg.Tensor(np.eye(VOCAB + 1, dtype=np.float32)[tokens])


# 2. The model: a token embedding plus a learned position embedding, two pre-norm
#    transformer blocks (causal self-attention, then a feed-forward layer, each added back
#    to its input), a last LayerNorm and a linear head giving a score for each next token.
class TinyGPT(nn.Module):
    def __init__(self, width=32, heads=2, blocks=2):
        super().__init__()
        self.tokens = nn.Linear(VOCAB + 1, width, bias=False)
        self.positions = nn.Parameter(tg.randn(LENGTH, width).numpy() * 0.02)
        self.blocks = nn.ModuleList(
            [
                nn.TransformerEncoderLayer(
                    width, heads, 2 * width, dropout=0.0, batch_first=True, norm_first=True
                )
                for _ in range(blocks)
            ]
        )
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, VOCAB + 1)
        # Position i may look at positions j <= i only (True above the diagonal = masked).
        self.causal = np.triu(np.ones((LENGTH, LENGTH), dtype=bool), 1)

    def forward(self, tokens):
        length = tokens.shape[1]
        h = self.tokens(tokens) + self.positions[:length]
        for block in self.blocks:
            h = block(h, src_mask=self.causal[:length, :length], is_causal=True)
        return self.head(self.norm(h))


def loss_of(model, tokens, targets):
    """Cross-entropy of the predictions of the sorted half (positions DIGITS.. onward)."""
    logits = model(tokens)[:, DIGITS:]
    return F.cross_entropy(logits.reshape(-1, VOCAB + 1), targets[:, DIGITS:].reshape(-1))


# 3. Training: Adam, one fresh batch of 64 sequences per step. With `compiled`, the step
#    (zero_grad, forward, backward, Adam's update) runs under tg.compile: the first call
#    records every kernel, the others replay them.
def train(steps, compiled=False, seed=0, report_every=100):
    tg.manual_seed(seed)
    generator = np.random.default_rng(seed)
    model = TinyGPT()
    optimizer = optim.Adam(model.parameters(), lr=3e-3)

    def step(tokens, targets):
        optimizer.zero_grad()
        loss = loss_of(model, tokens, targets)
        loss.backward()
        optimizer.step()
        return loss

    if compiled:
        step = tg.compile(step)
    losses = []
    started = time.perf_counter()
    for number in range(steps):
        tokens, targets = batch(generator, 64)
        losses.append(step(one_hot(tokens), tg.tensor(targets)).item())
        if report_every and (number % report_every == 0 or number == steps - 1):
            elapsed = time.perf_counter() - started
            print(f"step {number:4d}  loss {losses[-1]:.4f}  ({elapsed:.1f} s)")
    return model, losses


# 4. Evaluation: given the digits and the separator, the model writes the sorted half
#    itself, one greedy token at a time (each chosen token fed back in).
def sorted_correctly(model, count=1000, seed=1):
    tokens, targets = batch(np.random.default_rng(seed), count)
    written = tokens[:, : DIGITS + 1]
    with tg.no_grad():
        for _ in range(DIGITS):
            scores = model(one_hot(written)).numpy()[:, -1]
            written = np.concatenate([written, scores.argmax(axis=1)[:, None]], axis=1)
    return float(np.mean(np.all(written[:, DIGITS + 1 :] == targets[:, DIGITS:], axis=1)))


# 5. The graph of one loss, drawn with a box per module call (the two blocks, their
#    attention and feed-forward layers, the head).
def draw_graph(model, path):
    from tinygrad_ops import viz

    tokens, targets = batch(np.random.default_rng(2), 4)
    with viz.module_calls(model) as calls:
        loss = loss_of(model, one_hot(tokens), tg.tensor(targets))
    return viz.render(loss, path, groups=calls, depth=2)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600, help="training steps of 64")
    parser.add_argument("--compile", action="store_true", help="run the step under tg.compile")
    parser.add_argument("--graph", help="draw one loss's graph, grouped by module, here")
    args = parser.parse_args(argv)
    mode = "compiled" if args.compile else "eager"
    print(f"sorting {DIGITS} digits: {args.steps} steps, {mode}")
    started = time.perf_counter()
    model, losses = train(args.steps, compiled=args.compile)
    seconds = time.perf_counter() - started
    accuracy = sorted_correctly(model)
    print(f"final loss {losses[-1]:.4f} after {seconds:.1f} s of training")
    print(f"sorted correctly: {100 * accuracy:.1f}% of 1000 new sequences")
    if args.graph:
        print(f"graph written to {draw_graph(model, args.graph)}")


if __name__ == "__main__":
    main()
