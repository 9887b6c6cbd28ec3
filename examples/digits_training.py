"""What the two digits examples share: the training loop, with a learning-rate schedule,
and the accuracy measured in eval mode. `mlp_digits.py` and `cnn_digits.py` import it (run
them as `python examples/mlp_digits.py`: Python then finds this file beside them);
`mlp_moons.py` writes the same loop out in full, without the schedule.
"""

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)


def accuracy(model, x, y):
    """Share of correct predictions. eval(): BatchNorm uses its running statistics and
    Dropout does nothing, so a prediction does not depend on the rest of the batch."""
    model.eval()
    with tg.no_grad():
        predicted = model(tg.Tensor(x)).numpy().argmax(axis=1)
    model.train()
    return (predicted == y).mean()


def train(model, loader, optimizer, scheduler, epochs, test_x, test_y):
    """Forward, loss, backward, step for every batch; then one scheduler step per epoch, and
    a line with the epoch's mean training loss and the test accuracy."""
    for epoch in range(epochs):
        epoch_loss, seen = 0.0, 0
        for inputs, targets in loader:
            loss = F.cross_entropy(model(inputs), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            epoch_loss += loss.item() * len(targets)
            seen += len(targets)
        scheduler.step()
        print(
            f"epoch {epoch + 1:2d}: training loss {epoch_loss / seen:.4f}, "
            f"test accuracy {100 * accuracy(model, test_x, test_y):.1f}%"
        )
