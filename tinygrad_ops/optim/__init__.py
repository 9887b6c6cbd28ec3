"""Optimizers (SGD, Adam, AdamW); the learning-rate schedulers are in `lr_scheduler`.

Each optimizer follows the update rule of its PyTorch namesake step for step (the
pseudocode in PyTorch's documentation for torch.optim.SGD / Adam / AdamW), so the same
model trained with the same gradients ends at the same parameters. The per-parameter
state (momentum buffers, Adam's moments) is kept as numpy arrays; the parameters are
updated in place, in their own arrays (nothing is recorded), and their version counters
are bumped, so a graph that saved a parameter before the step refuses to backward through
the stale value.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.graph import clear_leaf_grad
from ..mode import replayed_whole
from ..ops.base import bump_version
from ..tensor import Tensor


class Optimizer:
    """Base class: holds parameter groups (each a dict with "params" and hyperparameters)
    and per-parameter state; subclasses write `step`.

    `params` is an iterable of Parameters, or of dicts {"params": [...], "lr": ...} to give
    groups their own hyperparameters, as in PyTorch.

    >>> import tinygrad_ops as tg
    >>> model = tg.nn.Sequential(tg.nn.Linear(2, 2), tg.nn.Linear(2, 1))
    >>> optimizer = tg.optim.SGD(
    ...     [{"params": model[0].parameters(), "lr": 0.01}, {"params": model[1].parameters()}],
    ...     lr=0.1,
    ... )
    >>> [group["lr"] for group in optimizer.param_groups]
    [0.01, 0.1]
    """

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        if isinstance(params, Tensor):
            raise TypeError(
                "params must be an iterable of tensors (model.parameters()), not a single Tensor"
            )
        params = list(params)
        if not params:
            raise ValueError("the optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.param_groups = []
        self.state = {}  # id(parameter) -> dict of numbers and numpy arrays
        seen = set()
        for group in groups:
            group_params = group["params"]
            group_params = (
                [group_params] if isinstance(group_params, Tensor) else list(group_params)
            )
            for index, parameter in enumerate(group_params):
                if not isinstance(parameter, Tensor):
                    raise TypeError(
                        f"the optimizer can only optimize Tensors, item {index} is a "
                        f"{type(parameter).__name__}"
                    )
                if not parameter.requires_grad:
                    raise ValueError(f"parameter {index} does not require grad")
                if id(parameter) in seen:
                    raise ValueError("a parameter appears more than once in the optimizer")
                seen.add(id(parameter))
            self.param_groups.append({**self.defaults, **group, "params": group_params})

    @replayed_whole
    def zero_grad(self, set_to_none=True):
        """Forget every parameter's gradient: set it to None (PyTorch's default), or with
        `set_to_none=False` fill it with zeros in place (`clear_leaf_grad`)."""
        for group in self.param_groups:
            for parameter in group["params"]:
                if set_to_none:
                    parameter._grad = None  # (the slot: None needs none of the property's checks)
                else:
                    clear_leaf_grad(parameter, set_to_none=False)

    @replayed_whole
    def step(self):
        """One update of every parameter that has a gradient, by the optimizer's `_update`
        (SGD and Adam write their loops out, with their options read once per group)."""
        for group in self.param_groups:
            for parameter, grad in self._parameters_with_grads(group):
                self._update(parameter, grad, group)

    def _update(self, parameter, grad, group):  # pragma: no cover - each optimizer has one
        raise NotImplementedError(f"{type(self).__name__} must define _update or step")

    def _parameters_with_grads(self, group):
        for parameter in group["params"]:  # (the slots, past the properties' checks)
            if parameter._grad is not None:
                yield parameter, parameter._grad._data

    @staticmethod
    def _subtract(parameter, update):
        """parameter -= update, in the parameter's own array (bumping its version counter).

        In place and without temporaries: the update of a large weight is one pass over
        its memory, as in hand-written numpy.
        """
        data = parameter._data
        np.subtract(data, update, out=data)  # (a ufunc's default casting is "same_kind")
        bump_version(parameter)

    # -- state dicts: parameters are referred to by their position, as in PyTorch ----------

    def state_dict(self):
        """{"state": {index: {...}}, "param_groups": [{hyperparameters, "params": [index]}]}
        with parameters numbered in group order; arrays are copies."""
        groups = []
        state = {}
        index = 0
        for group in self.param_groups:
            indices = []
            for parameter in group["params"]:
                if id(parameter) in self.state:
                    state[index] = {
                        key: value.copy() if isinstance(value, np.ndarray) else value
                        for key, value in self.state[id(parameter)].items()
                    }
                indices.append(index)
                index += 1
            settings = {key: value for key, value in group.items() if key != "params"}
            groups.append({**settings, "params": indices})
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore a state dict from `state_dict()` of an optimizer over the same parameters."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError(
                f"the state dict has {len(groups)} parameter groups, this optimizer has "
                f"{len(self.param_groups)}"
            )
        parameters = []
        for number, (saved, group) in enumerate(zip(groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(
                    f"parameter group {number}: the state dict has {len(saved['params'])} "
                    f"parameters, this optimizer has {len(group['params'])}"
                )
            parameters.extend(zip(saved["params"], group["params"]))
        new_state = {}
        saved_state = {int(key): value for key, value in state_dict["state"].items()}
        for index, parameter in parameters:
            if index not in saved_state:
                continue
            entry = {}
            for key, value in saved_state[index].items():
                if isinstance(value, Tensor):
                    value = value.data
                if isinstance(value, np.ndarray) and value.ndim > 0:
                    if value.shape != parameter.shape:
                        raise ValueError(
                            f"optimizer state '{key}' of parameter {index} has shape "
                            f"{value.shape}, the parameter has shape {parameter.shape}"
                        )
                    value = value.astype(parameter.dtype, copy=True)
                elif isinstance(value, np.ndarray):
                    value = value.item()
                entry[key] = value
            new_state[id(parameter)] = entry
        self.state = new_state
        for saved, group in zip(groups, self.param_groups):
            for key, value in saved.items():
                if key != "params":
                    group[key] = value

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for number, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {number}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        return "\n".join(lines) + "\n)"


def _check_non_negative(name, value):
    if value < 0:
        raise ValueError(f"invalid {name}: {value} (must be >= 0)")


def sgd_update(optimizer, parameter, grad, lr, momentum, dampening, weight_decay, nesterov):
    """SGD's step for one parameter (weight decay, momentum, Nesterov; see `SGD`), with the
    momentum buffer updated in place after its first step. `SGD.step` calls it, and so
    does a compiled step's replay (jit/fused_optim.py): one update, bit for bit."""
    if weight_decay != 0:
        grad = grad + weight_decay * parameter._data
    if momentum != 0:
        state = optimizer.state.setdefault(id(parameter), {})
        buffer = state.get("momentum_buffer")
        if buffer is None:
            buffer = state["momentum_buffer"] = np.array(grad, copy=True)
        else:  # momentum b + (1 - dampening) g
            np.multiply(buffer, momentum, out=buffer)
            np.add(buffer, (1 - dampening) * grad, out=buffer)
        grad = grad + momentum * buffer if nesterov else buffer
    Optimizer._subtract(parameter, lr * grad)


def adam_update(optimizer, parameter, grad, lr, betas, eps, weight_decay, amsgrad=False):
    """Adam's (and AdamW's) step for one parameter (see `Adam`), with the moments and the
    update computed in place. `Adam.step` calls it, and so does a compiled step's replay
    (jit/fused_optim.py): one update, bit for bit. (asarray: on a 0-d parameter numpy's
    results are scalars, which `out=` cannot write into.)"""
    beta1, beta2 = betas
    value = parameter._data
    if weight_decay != 0:
        if optimizer.decoupled_weight_decay:
            # AdamW (Loshchilov & Hutter 2019): shrink the weights directly.
            np.multiply(value, 1 - lr * weight_decay, out=value, casting="same_kind")
        else:
            grad = grad + weight_decay * value
    state = optimizer.state.setdefault(id(parameter), {})
    if not state:
        state["step"] = 0
        state["exp_avg"] = np.zeros_like(value)
        state["exp_avg_sq"] = np.zeros_like(value)
    state["step"] += 1
    step = state["step"]
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    np.multiply(exp_avg, beta1, out=exp_avg)  # beta1 m + (1 - beta1) g
    np.add(exp_avg, (1 - beta1) * grad, out=exp_avg)
    scaled = np.asarray((1 - beta2) * grad)  # beta2 v + ((1 - beta2) g) g
    np.multiply(scaled, grad, out=scaled)
    np.multiply(exp_avg_sq, beta2, out=exp_avg_sq)
    np.add(exp_avg_sq, scaled, out=exp_avg_sq)
    if amsgrad:  # v_max = max(v_max, v) stands for v below (Reddi et al. 2018)
        if "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = np.zeros_like(value)
        np.maximum(state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
        exp_avg_sq = state["max_exp_avg_sq"]
    step_size = lr / (1 - beta1**step)
    update = np.asarray(np.sqrt(exp_avg_sq))  # sqrt(v) / sqrt(1 - beta2^t) + eps
    np.divide(update, math.sqrt(1 - beta2**step), out=update)
    np.add(update, eps, out=update)
    np.divide(exp_avg, update, out=update)  # step_size * (m / denominator)
    np.multiply(update, step_size, out=update)
    Optimizer._subtract(parameter, update)


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, Nesterov momentum and L2
    weight decay, as torch.optim.SGD:

        g = grad + weight_decay * p
        b = g (first step), else momentum * b + (1 - dampening) * g
        g = g + momentum * b  (nesterov)   or   g = b  (plain momentum)
        p = p - lr * g

    >>> import tinygrad_ops as tg
    >>> p = tg.nn.Parameter(tg.Tensor([1.0]))
    >>> optimizer = tg.optim.SGD([p], lr=0.1)
    >>> (p * p).sum().backward()
    >>> optimizer.step()
    >>> p.numpy()
    array([0.8], dtype=float32)
    """

    def __init__(
        self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False
    ):
        for name, value in (("lr", lr), ("momentum", momentum), ("weight_decay", weight_decay)):
            _check_non_negative(name, value)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum needs momentum > 0 and dampening = 0")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
        }
        super().__init__(params, defaults)

    # The step is this update for each parameter, with these settings of its group
    # (a compiled step calls it per parameter: jit/fused_optim.py).
    parameter_update = (sgd_update, ("lr", "momentum", "dampening", "weight_decay", "nesterov"))

    @replayed_whole
    def step(self):
        for group in self.param_groups:
            lr = group["lr"]
            options = tuple(group[key] for key in ("momentum", "dampening", "weight_decay"))
            plain = options[0] == 0 and options[2] == 0  # no momentum, no weight decay
            for parameter, grad in self._parameters_with_grads(group):
                if plain:  # p -= lr g: what sgd_update comes down to, without its call
                    self._subtract(parameter, lr * grad)
                else:
                    sgd_update(self, parameter, grad, lr, *options, group["nesterov"])


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015) as torch.optim.Adam, with L2 weight decay added to the
    gradient:

        g = grad + weight_decay * p
        m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g²
        p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

    `amsgrad=True` divides by the largest v so far instead (Reddi et al. 2018), as PyTorch.

    >>> import tinygrad_ops as tg
    >>> p = tg.nn.Parameter(tg.Tensor([1.0]))
    >>> optimizer = tg.optim.Adam([p], lr=0.1)
    >>> (p * p).sum().backward()
    >>> optimizer.step()
    >>> round(p.item(), 6)  # the first Adam step moves each weight by about lr
    0.9
    """

    decoupled_weight_decay = False

    def __init__(
        self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False
    ):
        _check_non_negative("lr", lr)
        _check_non_negative("eps", eps)
        _check_non_negative("weight_decay", weight_decay)
        for beta in betas:
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"invalid beta {beta}: each beta must be in [0, 1)")
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": bool(amsgrad),
        }
        super().__init__(params, defaults)

    # The step is this update for each parameter, with these settings of its group.
    parameter_update = (adam_update, ("lr", "betas", "eps", "weight_decay", "amsgrad"))

    @replayed_whole
    def step(self):
        for group in self.param_groups:
            options = [group[key] for key in ("lr", "betas", "eps", "weight_decay", "amsgrad")]
            for parameter, grad in self._parameters_with_grads(group):
                adam_update(self, parameter, grad, *options)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter 2019), as torch.optim.AdamW:
    p = p (1 - lr weight_decay) first, then the Adam step without L2 in the gradient.
    The default weight_decay is 0.01, as PyTorch's.

    >>> import tinygrad_ops as tg
    >>> p = tg.nn.Parameter(tg.Tensor([1.0]))
    >>> optimizer = tg.optim.AdamW([p], lr=0.1, weight_decay=0.5)
    >>> (p * p).sum().backward()
    >>> optimizer.step()
    >>> round(p.item(), 6)  # 1 * (1 - 0.1 * 0.5) - 0.1
    0.85
    """

    decoupled_weight_decay = True

    def __init__(
        self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False
    ):
        super().__init__(
            params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad
        )


class RMSprop(Optimizer):
    """RMSprop (Hinton's lecture 6e) as torch.optim.RMSprop:

        g = grad + weight_decay * p;   v = alpha v + (1 - alpha) g²
        centered: a = alpha a + (1 - alpha) g,  v~ = v - a²   (else v~ = v)
        u = g / (sqrt(v~) + eps);   b = momentum b + u, u = b   (with momentum)
        p = p - lr u

    >>> import tinygrad_ops as tg
    >>> p = tg.nn.Parameter(tg.Tensor([1.0]))
    >>> optimizer = tg.optim.RMSprop([p], lr=0.01)
    >>> (p * p).sum().backward()
    >>> optimizer.step()
    >>> round(p.item(), 4)  # 1 - 0.01 * 2 / sqrt(0.01 * 4)
    0.9
    """

    def __init__(
        self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False
    ):
        for name, value in (("lr", lr), ("alpha", alpha), ("eps", eps), ("momentum", momentum)):
            _check_non_negative(name, value)
        _check_non_negative("weight_decay", weight_decay)
        defaults = {"lr": lr, "alpha": alpha, "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, {**defaults, "momentum": momentum, "centered": centered})

    def _update(self, parameter, grad, group):
        alpha = group["alpha"]
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * parameter._data
        state = self.state.setdefault(id(parameter), {})
        if not state:
            state["square_avg"] = np.zeros_like(parameter._data)
        square_avg = state["square_avg"]
        square_avg[...] = alpha * square_avg + (1 - alpha) * grad * grad
        if group["centered"]:
            grad_avg = state.setdefault("grad_avg", np.zeros_like(parameter._data))
            grad_avg[...] = alpha * grad_avg + (1 - alpha) * grad
            update = grad / (np.sqrt(square_avg - grad_avg * grad_avg) + group["eps"])
        else:
            update = grad / (np.sqrt(square_avg) + group["eps"])
        if group["momentum"] > 0:
            buffer = state.setdefault("momentum_buffer", np.zeros_like(parameter._data))
            buffer[...] = group["momentum"] * buffer + update
            update = buffer
        self._subtract(parameter, group["lr"] * update)


class Adagrad(Optimizer):
    """Adagrad (Duchi, Hazan & Singer 2011) as torch.optim.Adagrad:

        g = grad + weight_decay * p;   lr_t = lr / (1 + (t - 1) lr_decay)
        s = s + g²;   p = p - lr_t g / (sqrt(s) + eps)

    >>> import tinygrad_ops as tg
    >>> p = tg.nn.Parameter(tg.Tensor([1.0]))
    >>> optimizer = tg.optim.Adagrad([p], lr=0.1)
    >>> (p * p).sum().backward()
    >>> optimizer.step()
    >>> round(p.item(), 6)  # 1 - 0.1 * 2 / sqrt(4)
    0.9
    """

    def __init__(
        self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
        eps=1e-10,
    ):  # fmt: skip
        for name, value in (("lr", lr), ("lr_decay", lr_decay), ("eps", eps)):
            _check_non_negative(name, value)
        _check_non_negative("weight_decay", weight_decay)
        _check_non_negative("initial_accumulator_value", initial_accumulator_value)
        defaults = {"lr": lr, "lr_decay": lr_decay, "weight_decay": weight_decay, "eps": eps}
        super().__init__(
            params, {**defaults, "initial_accumulator_value": initial_accumulator_value}
        )

    def _update(self, parameter, grad, group):
        state = self.state.setdefault(id(parameter), {})
        if not state:
            state["step"] = 0
            state["sum"] = np.full_like(parameter._data, group["initial_accumulator_value"])
        state["step"] += 1
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * parameter._data
        lr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        state["sum"] += grad * grad
        self._subtract(parameter, lr * grad / (np.sqrt(state["sum"]) + group["eps"]))


# ----------------------------------------------------------------------------------------------
# Learning-rate schedulers live in lr_scheduler.py (PyTorch's path); the names are here too.
from .lr_scheduler import (  # noqa: E402 (below the optimizers they schedule)
    CosineAnnealingLR,
    ExponentialLR,
    LambdaLR,
    LRScheduler,
    MultiStepLR,
    ReduceLROnPlateau,
    StepLR,
)

__all__ = [
    "SGD",
    "Adagrad",
    "Adam",
    "AdamW",
    "CosineAnnealingLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "MultiStepLR",
    "Optimizer",
    "RMSprop",
    "ReduceLROnPlateau",
    "StepLR",
    "lr_scheduler",
]
