"""The exercises, in the order a course would take them: name -> `Exercise`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import check_activations, check_norms, check_scans


@dataclass
class Exercise:
    """One exercise: the file a student fills in (`name`.py) and the checks of it."""

    name: str
    title: str
    cases: Callable  # () -> list of checking.Case

    @property
    def filename(self) -> str:
        return f"{self.name}.py"


EXERCISES = {
    exercise.name: exercise
    for exercise in (
        Exercise("relu", "ReLU, and the in-place trap", check_activations.relu_cases),
        Exercise("softmax", "stable softmax over any axis", check_activations.softmax_cases),
        Exercise("log_softmax", "stable log-softmax", check_activations.log_softmax_cases),
        Exercise("layer_norm", "LayerNorm over the last k dims", check_norms.layer_norm_cases),
        Exercise(
            "batch_norm",
            "BatchNorm, train and eval, running statistics",
            check_norms.batch_norm_cases,
        ),
        Exercise("rms_norm", "RMSNorm", check_norms.rms_norm_cases),
        Exercise(
            "matmul",
            "matmul: loops, vectorised, backward with batch dims",
            check_norms.matmul_cases,
        ),
        Exercise("cross_entropy", "cross-entropy", check_activations.cross_entropy_cases),
        Exercise(
            "gradient_check",
            "a gradient check by central differences",
            check_activations.gradient_check_cases,
        ),
        Exercise("scan_combine", "the (J, e) operator of a chain", check_scans.scan_combine_cases),
        Exercise("hillis_steele", "the Hillis-Steele scan", check_scans.hillis_steele_cases),
        Exercise("blelloch", "the Blelloch scan", check_scans.blelloch_cases),
        Exercise("blocked", "the blocked scan", check_scans.blocked_cases),
    )
}
