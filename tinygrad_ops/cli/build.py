"""What a run's settings build: its data (split three ways), model, optimizer, schedule.

`tinygrad-ops train` builds a run from its options, `--resume` and `predict` rebuild it
from a checkpoint's `config`: both through these functions, so they always agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import data, nn, optim
from .options import UsageError


def build_model(in_features, classes, config):
    """The model a run's settings describe: `nn.SmallCNN` over 8x8 images for --model cnn,
    else the `nn.MLP` (hidden sizes, activation, norm, dropout)."""
    if config.get("model", "mlp") == "cnn":
        return nn.SmallCNN((1, 8, 8), classes, dropout=config["dropout"])
    return nn.MLP(
        in_features,
        config["hidden"],
        classes,
        activation=config["activation"],
        norm=config["norm"],
        dropout=config["dropout"],
    )


def build_optimizer(parameters, config):
    name = config["optimizer"]
    if name == "sgd":
        return optim.SGD(
            parameters,
            lr=config["lr"],
            momentum=config["momentum"],
            weight_decay=config["weight_decay"],
        )
    optimizer_class = optim.Adam if name == "adam" else optim.AdamW
    return optimizer_class(parameters, lr=config["lr"], weight_decay=config["weight_decay"])


def build_scheduler(optimizer, config):
    if config["scheduler"] == "step":
        return optim.StepLR(optimizer, step_size=max(1, config["epochs"] // 3), gamma=0.1)
    if config["scheduler"] == "cosine":
        return optim.CosineAnnealingLR(optimizer, T_max=config["epochs"])
    return None


@dataclass
class Splits:
    """A data set split three ways (features, labels per part)."""

    train_x: object
    train_y: object
    validation_x: object
    validation_y: object
    test_x: object
    test_y: object
    classes: int


def split_data(config):
    """The data set of a run, split as the run was: first the held-out test set
    (`test_fraction` of all), then the validation set (`validation_fraction` of all)
    from the rest; each split stratified and seeded by the run's seed.

    >>> parts = split_data({"dataset": "moons", "seed": 0, "test_fraction": 0.2,
    ...                     "validation_fraction": 0.2})
    >>> len(parts.train_y), len(parts.validation_y), len(parts.test_y)
    (300, 100, 100)
    """
    features, labels = data.load_dataset(config["dataset"], seed=config["seed"])
    rest_x, test_x, rest_y, test_y = data.train_test_split(
        features, labels, config["test_fraction"], seed=config["seed"]
    )
    # validation_fraction is a share of the whole data set: rescale it to the rest.
    share = config["validation_fraction"] / (1.0 - config["test_fraction"])
    if not 0.0 < share < 1.0:
        raise UsageError(
            f"--validation-fraction {config['validation_fraction']} and --test-fraction "
            f"{config['test_fraction']} leave no training data; make them smaller"
        )
    train_x, validation_x, train_y, validation_y = data.train_test_split(
        rest_x, rest_y, share, seed=config["seed"] + 1
    )
    classes = int(labels.max()) + 1
    return Splits(train_x, train_y, validation_x, validation_y, test_x, test_y, classes)
