"""The exercises, in the order a course takes them: name -> `Exercise`.

First the engine itself (a `Value` with its topological order and rules, undoing
broadcasting, the walk over a tape), then the rules of single ops, a custom `tg.Function`
and a second-order gradient, then the scans.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import check_activations, check_engine, check_norms, check_ops, check_scans
from .screen import NUMPY_ONLY, WITH_THE_ENGINE


@dataclass
class Exercise:
    """One exercise: the file a student fills in (`name`.py), its checks (each a property
    of one function), the diagnoses of its known mistakes, and what it may import."""

    name: str
    title: str
    checks: Callable  # () -> list of checking.Check
    diagnoses: Callable  # () -> list of checking.Diagnosis
    imports: frozenset = NUMPY_ONLY
    import_limit: float = 10.0  # seconds the file may take to import

    @property
    def filename(self) -> str:
        return f"{self.name}.py"


def _exercise(name, title, family, **options):
    return Exercise(
        name,
        title,
        getattr(family, f"{name}_checks"),
        getattr(family, f"{name}_diagnoses"),
        **options,
    )


EXERCISES = {
    exercise.name: exercise
    for exercise in (
        _exercise("value", "build the engine: a Value, its order and its rules", check_engine),
        _exercise("unbroadcast", "broadcasting's gradient: unbroadcast", check_engine),
        _exercise("tape", "the sequential walk over a tape", check_engine),
        _exercise("relu", "ReLU, and the in-place trap", check_activations),
        _exercise("softmax", "stable softmax over any axis", check_activations),
        _exercise("log_softmax", "stable log-softmax", check_activations),
        _exercise("layer_norm", "LayerNorm over the last k dims", check_norms),
        _exercise("batch_norm", "BatchNorm, train and eval, running statistics", check_norms),
        _exercise("rms_norm", "RMSNorm", check_norms),
        _exercise("matmul", "matmul: loops, vectorised, backward with batch dims", check_norms),
        _exercise("cross_entropy", "cross-entropy", check_activations),
        _exercise("gradient_check", "a gradient check by central differences", check_activations),
        _exercise("conv2d", "conv2d's backward", check_ops),
        _exercise("function", "a custom tg.Function: SiLU", check_ops, imports=WITH_THE_ENGINE),
        _exercise(
            "hvp", "a Hessian-vector product (double backward)", check_ops, imports=WITH_THE_ENGINE
        ),
        _exercise("scan_combine", "the (J, e) operator of a chain", check_scans),
        _exercise("hillis_steele", "the Hillis-Steele scan", check_scans),
        _exercise("blelloch", "the Blelloch scan", check_scans),
        _exercise("blocked", "the blocked scan", check_scans),
    )
}
