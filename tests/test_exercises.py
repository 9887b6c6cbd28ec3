"""tinygrad_ops.exercises: the solutions pass every check, blanks and wrong answers fail.

Each wrong answer below is a mistake students make; the check must catch it in the case
named (the case whose hint explains it).
"""

import pytest

from tinygrad_ops import exercises
from tinygrad_ops.cli import main
from tinygrad_ops.exercises.files import solution_source, unmarked

# (exercise, text of the solution, the mistake put in its place, the case that catches it)
MISTAKES = [
    ("relu", "grad_output * (x > 0)", "grad_output * (x >= 0)", "inputs exactly 0"),
    (
        "relu",
        "return grad_output * (x > 0)",
        "grad_output[x <= 0] = 0\n    return grad_output",
        "the in-place trap",
    ),
    ("relu", "grad_output * (x > 0)", "grad_output * (x > 0).astype(np.float64)", "float32"),
    ("softmax", "x - x.max(axis=axis, keepdims=True)", "x - x.max()", "rows 2000 apart"),
    ("softmax", "x - x.max(axis=axis, keepdims=True)", "x", "large inputs"),
    ("softmax", "exps.sum(axis=axis, keepdims=True)", "exps.sum(axis=-1, keepdims=True)", "axis 0"),
    (
        "softmax",
        "(grad_output * y).sum(axis=axis, keepdims=True)",
        "(grad_output * y).sum()",
        "shape (3, 4), axis -1",
    ),
    (
        "log_softmax",
        "shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))",
        "np.log(np.exp(x) / np.exp(x).sum(axis=axis, keepdims=True))",
        "large inputs",
    ),
    (
        "layer_norm",
        "d_x_hat - mean_d - x_hat * mean_d_x_hat",
        "d_x_hat - mean_d",
        "shape (4, 5), k = 1",
    ),
    (
        "layer_norm",
        "(grad_output * x_hat).sum(axis=leading)",
        "(grad_output * x_hat).sum()",
        "k = 2",
    ),
    ("batch_norm", "momentum * var * count / (count - 1)", "momentum * var", "a batch of 2"),
    (
        "batch_norm",
        "        mean, var = running_mean, running_var\n",
        "        mean, var = x.mean(axis=axes), x.var(axis=axes)\n",
        "eval, shape (6, 3)",
    ),
    (
        "rms_norm",
        "d_x_hat - x * rstd**2 * (d_x_hat * x).mean(axis=axes, keepdims=True)",
        "d_x_hat",
        "shape (4, 5), k = 1",
    ),
    (
        "matmul",
        "(A[..., :, :, None] * B[..., None, :, :]).sum(axis=-2)",
        "A @ B",
        "vectorised, (3, 4) @ (4, 2)",
    ),
    (
        "matmul",
        "return sum_to_shape(grad_A, A.shape), sum_to_shape(grad_B, B.shape)",
        "return grad_A, grad_B",
        "B shared by a batch",
    ),
    (
        "cross_entropy",
        "grad * (grad_output / len(targets))",
        "grad * grad_output",
        "4 rows, 3 classes",
    ),
    ("gradient_check", "x = np.array(x, dtype=np.float64)", "x = np.array(x)", "float32 input"),
    (
        "gradient_check",
        "(above - below) / (2 * h)",
        "(above - float(f(x))) / h",
        "shape (3, 2), float64",
    ),
    ("scan_combine", "a @ B + b", "b @ A + a", "random 3 × 3 pairs"),
    (
        "hillis_steele",
        "combine(items[i - step], items[i])",
        "combine(items[i], items[i - step])",
        "order (strings)",
    ),
    ("hillis_steele", "        step *= 2", "        step += 1", "8 elements (intervals)"),
    (
        "blelloch",
        "combine(pair_prefixes[i // 2 - 1], items[i])",
        "combine(items[i], pair_prefixes[i // 2 - 1])",
        "order (strings)",
    ),
    (
        "blocked",
        "        carry = out[-1]",
        "        carry = prefixes[-1] if carry is None else carry",
        "a chain of 16 (J, e) steps",
    ),
]


def statuses(directory, name):
    return {result.case: result for result in exercises.check(directory, name)}


def test_the_engines_solutions_pass_every_check(tmp_path):
    exercises.init(tmp_path, solved=True)
    results = exercises.check(tmp_path)
    failed = [(r.exercise, r.case, r.message) for r in results if r.status != "pass"]
    assert failed == []
    assert {result.exercise for result in results} == set(exercises.EXERCISES)


def test_a_blank_fails_every_case_as_not_written(tmp_path):
    exercises.init(tmp_path)
    results = exercises.check(tmp_path)
    assert results
    assert {result.status for result in results} == {"not written"}


@pytest.mark.parametrize(("name", "right", "wrong", "caught_by"), MISTAKES)
def test_a_wrong_answer_fails_the_case_that_explains_it(tmp_path, name, right, wrong, caught_by):
    source = unmarked(solution_source(name))
    assert right in source, "the mistake's text is no longer in the solution"
    (tmp_path / f"{name}.py").write_text(source.replace(right, wrong, 1), encoding="utf-8")
    results = statuses(tmp_path, name)
    failing = [case for case, result in results.items() if result.status in ("FAIL", "ERROR")]
    assert any(caught_by in case for case in failing), (caught_by, failing)


def test_the_report_names_the_case_and_gives_its_hint(tmp_path):
    source = unmarked(solution_source("relu")).replace("(x > 0)", "(x >= 0)")
    (tmp_path / "relu.py").write_text(source, encoding="utf-8")
    text = exercises.report(exercises.check(tmp_path, "relu"))
    assert "FAIL  relu            6/7 cases" in text
    assert "FAIL: inputs exactly 0: backward vs the engine: max error 1" in text
    assert "hint: at x = 0 PyTorch takes the subgradient 0: x > 0, not x >= 0" in text


def test_a_file_that_does_not_import_is_reported(tmp_path):
    (tmp_path / "relu.py").write_text("def backward(:\n", encoding="utf-8")
    (result,) = exercises.check(tmp_path, "relu")
    assert result.status == "ERROR"
    assert "SyntaxError" in result.message


def test_init_keeps_a_students_work(tmp_path):
    exercises.init(tmp_path, ["relu"])
    with pytest.raises(FileExistsError, match="--force"):
        exercises.init(tmp_path, ["relu"])
    with pytest.raises(ValueError, match="unknown exercise"):
        exercises.init(tmp_path, ["relux"])


def test_the_command_line(tmp_path, capsys):
    assert main(["exercises", "init", str(tmp_path), "--solved"]) == 0
    assert "wrote 13 solved exercise files" in capsys.readouterr().out
    assert main(["exercises", "check", str(tmp_path), "softmax"]) == 0
    assert "PASS  softmax" in capsys.readouterr().out
    blank = tmp_path / "blank"
    assert main(["exercises", "init", str(blank), "matmul"]) == 0
    assert main(["exercises", "check", str(blank), "matmul"]) == 1
    assert "not written yet" in capsys.readouterr().out
    assert main(["exercises", "check", str(blank), "nope"]) == 2
