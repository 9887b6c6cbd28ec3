"""A training run's checkpoint: what it holds, writing it, and reading it back checked.

Every way a file can fail to be a run's checkpoint (damaged, foreign, a plain state dict,
contents that do not fit the model) is one `CheckpointError` naming the file: the command
line prints it as one line.
"""

from __future__ import annotations

import os

from .. import nn
from ..serialize import CheckpointError, load
from .build import build_model, split_data
from .options import RESUME_MUST_MATCH, UsageError

# What `tinygrad-ops train` writes, and the type each entry must have.
ENTRIES = {
    "config": dict,
    "epoch": int,
    "model": dict,
    "optimizer": dict,
    "scheduler": (dict, type(None)),
    "rng": dict,
    "history": dict,
}

# The settings of a run's `config` that rebuild its data and its model (`load_model`), and
# the type each must have ("model" may be missing: runs from before --model were MLPs).
MODEL_SETTINGS = {
    "dataset": str,
    "seed": int,
    "test_fraction": float,
    "validation_fraction": float,
    "hidden": list,
    "activation": str,
    "norm": str,
    "dropout": float,
}


def make(config, epoch, model, optimizer, scheduler, loader, history):
    """Everything a resumed run needs to continue exactly as an uninterrupted one would:
    the weights, the optimizer's moments, the schedule's position, and the random
    generators' states (initialisation and dropout draw from `nn`'s, shuffling from the
    loader's)."""
    return {
        "config": config,
        "epoch": epoch,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": None if scheduler is None else scheduler.state_dict(),
        "rng": {"init": nn.get_rng_state(), "loader": loader.state_dict()},
        "history": history,
    }


def read(path):
    """The checkpoint at `path`, its entries checked against `ENTRIES`."""
    checkpoint = load(path)
    if not isinstance(checkpoint, dict) or not set(ENTRIES) <= set(checkpoint):
        held = (
            f"the keys {', '.join(map(str, list(checkpoint)[:6]))}"
            if isinstance(checkpoint, dict)
            else f"a {type(checkpoint).__name__}"
        )
        raise CheckpointError(
            f"{path} is not a checkpoint of `tinygrad-ops train` (it holds {held}); a model's "
            "state_dict loads with model.load_state_dict(tg.load(path))"
        )
    for key, kind in ENTRIES.items():
        value = checkpoint[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise CheckpointError(
                f"{path}: the checkpoint's '{key}' entry is a {type(value).__name__}; the file "
                "is damaged"
            )
    return checkpoint


def resume(path, config, model, optimizer, scheduler, loader):
    """Restore a run from its checkpoint into the given objects; returns the checkpoint."""
    if not os.path.exists(path):
        raise UsageError(f"--resume: no checkpoint at {path} (train without --resume first)")
    checkpoint = read(path)
    for key in RESUME_MUST_MATCH:
        saved = checkpoint["config"].get(key)
        if key not in checkpoint["config"]:
            raise UsageError(
                f"--resume: the checkpoint {path} has no {_option(key)} setting (an older "
                "version wrote it); train afresh, or use another --out"
            )
        if saved != config[key]:
            raise UsageError(
                f"--resume: the checkpoint {path} was trained with {_option(key)} {saved}, not "
                f"{config[key]}; use the same settings (or another --out)"
            )
    try:
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        if scheduler is not None and checkpoint["scheduler"] is not None:
            scheduler.load_state_dict(checkpoint["scheduler"])
        nn.set_rng_state(checkpoint["rng"]["init"])
        loader.load_state_dict(checkpoint["rng"]["loader"])
    except (RuntimeError, KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
        # The entries have the right types but their contents do not fit this run: what
        # each restorer raises then is its own; to the user it is one damaged file.
        reason = " ".join(str(error).split())  # load_state_dict lists problems on lines
        raise CheckpointError(
            f"cannot resume from {path}: {type(error).__name__}: {reason}"
        ) from None
    return checkpoint


def _option(key):
    return "--" + key.replace("_", "-")


def check_model_settings(path, config):
    """Raise a CheckpointError naming `path` and the setting when the run's `config` lacks
    one that rebuilds its data and model, or holds one of the wrong type (shared by
    `predict`, `load_model` and `graph --checkpoint`)."""
    for key, kind in MODEL_SETTINGS.items():
        if key not in config:
            raise CheckpointError(
                f"{path}: the run's config has no {_option(key)} setting, which rebuilds its "
                "model; the file was not written by this version of `tinygrad-ops train`"
            )
        value = config[key]
        fits = isinstance(value, (int, float)) if kind is float else isinstance(value, kind)
        if not fits or isinstance(value, bool):
            raise CheckpointError(
                f"{path}: the run's {_option(key)} setting is {value!r}, not a "
                f"{'number' if kind is float else kind.__name__}; the file is damaged"
            )


def load_model(path):
    """The model a run's checkpoint holds, in eval mode, and the checkpoint itself.

    The model is rebuilt from the run's settings (`config`) for its data set, then its
    weights are loaded: `nn.MLP(...)` and `load_state_dict`, as in PyTorch.

    >>> import tempfile
    >>> from tinygrad_ops.cli import build_parser, options, train
    >>> out = tempfile.mkdtemp()
    >>> options_given = ["--dataset", "moons", "--hidden", "4", "--epochs", "1"]
    >>> args = build_parser("train").parse_args(["train", *options_given, "--graph-format", "dot"])
    >>> _ = train.train(options.config_from_args(args), out, progress=False, log=lambda line: None)
    >>> model, checkpoint = load_model(f"{out}/checkpoint.npz")
    >>> type(model).__name__, model.training, checkpoint["epoch"]
    ('MLP', False, 1)
    """
    checkpoint = read(path)
    check_model_settings(path, checkpoint["config"])
    splits = split_data(checkpoint["config"])
    model = build_model(splits.train_x.shape[1], splits.classes, checkpoint["config"])
    try:
        model.load_state_dict(checkpoint["model"])
    except (RuntimeError, TypeError) as error:
        reason = " ".join(str(error).split())
        raise CheckpointError(f"cannot load the model of {path}: {reason}") from None
    model.eval()
    return model, checkpoint
