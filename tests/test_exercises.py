"""tinygrad_ops.exercises: the solutions pass every check, the blanks fail as not written,
each typical mistake fails with the hint that names it, and the checker can be neither
fooled nor stopped by the code it runs.
"""

import json

import pytest

from tinygrad_ops import exercises
from tinygrad_ops.cli import main
from tinygrad_ops.exercises import runner
from tinygrad_ops.exercises.files import BLANKS, blank, solution_source, unmarked
from tinygrad_ops.exercises.screen import NUMPY_ONLY

RECURSIVE_ORDER = """    order, seen = [], set()

    def visit(node):
        if id(node) in seen:
            return
        seen.add(id(node))
        for parent in node.parents:
            visit(parent)
        order.append(node)

    visit(root)
    return order
"""
ITERATIVE_ORDER = (
    solution_source("value").split("    # BEGIN SOLUTION\n")[-1].split("    # END SOLUTION")[0]
)

# (exercise, text of the solution, the mistake put in its place, words of the hint it must get)
MISTAKES = [
    ("value", "            return g, g\n", "            return g, 0 * g\n", "to *both* operands"),
    (
        "value",
        "return g * other.data, g * self.data",
        "return g * self.data, g * other.data",
        "the *other* operand",
    ),
    ("value", "self.data ** (exponent - 1)", "self.data**exponent", "the exponent drops by one"),
    (
        "value",
        "(g * exponent * self.data ** (exponent - 1),)",
        "(g * self.data ** (exponent - 1),)",
        "multiply by the exponent",
    ),
    ("value", "(g * (1 - out * out),)", "(g * (1 - self.data * self.data),)", "square the output"),
    (
        "value",
        "            return (g * out,)\n",
        "            return (g * self.data,)\n",
        "exp' = exp",
    ),
    ("value", "(g / self.data,)", "(g * self.data,)", "log' = 1 / a"),
    ("value", ITERATIVE_ORDER, RECURSIVE_ORDER, "the order recurses"),
    ("value", "        if id(node) in seen:\n            continue\n", "", "listed twice"),
    (
        "value",
        "grads[id(parent)] = parent_grad if previous is None else previous + parent_grad",
        "grads[id(parent)] = parent_grad",
        "you overwrite the first",
    ),
    (
        "value",
        "grads[id(parent)] = parent_grad if previous is None else previous + parent_grad",
        "if previous is None:\n"
        "                    grads[id(parent)] = parent_grad\n"
        "                else:\n"
        "                    previous += parent_grad",
        "in place (+=)",
    ),
    (
        "value",
        "node.grad = grad\n            for parent",
        "node.grad = grad if node.grad is None else node.grad + grad\n            for parent",
        "an intermediate's .grad adds up",
    ),
    (
        "value",
        "node.grad = grad if node.grad is None else node.grad + grad\n                continue",
        "node.grad = grad\n                continue",
        "a leaf's .grad is replaced",
    ),
    (
        "unbroadcast",
        "grad.sum(axis=tuple(range(extra)))",
        "grad.mean(axis=tuple(range(extra)))",
        "a sum, not a mean",
    ),
    (
        "unbroadcast",
        "grad.sum(axis=stretched, keepdims=True)",
        "grad.sum(axis=stretched)",
        "keep the size-1 dims",
    ),
    (
        "unbroadcast",
        "    if extra:\n        grad = grad.sum(axis=tuple(range(extra)))\n",
        "",
        "leading dims",
    ),
    (
        "unbroadcast",
        "unbroadcast(grad_output * b, np.shape(a)), unbroadcast(grad_output * a, np.shape(b))",
        "grad_output * b, grad_output * a",
        "its operand's shape",
    ),
    (
        "unbroadcast",
        "unbroadcast(grad_output * b, np.shape(a)), unbroadcast(grad_output * a, np.shape(b))",
        "unbroadcast(grad_output * a, np.shape(a)), unbroadcast(grad_output * b, np.shape(b))",
        "g times the *other*",
    ),
    ("tape", "for step in reversed(tape):", "for step in tape:", "oldest step first"),
    (
        "tape",
        "grads[node] = share if node not in grads else grads[node] + share",
        "grads[node] = share",
        "you overwrite the first share",
    ),
    (
        "tape",
        "grads[node] = share if node not in grads else grads[node] + share",
        "if node in grads:\n"
        "                grads[node] += share\n"
        "            else:\n"
        "                grads[node] = share",
        "in place (+=)",
    ),
    (
        "tape",
        "        if step.output not in grads:\n            continue\n",
        "",
        "skip a step whose output has no gradient",
    ),
    ("relu", "grad_output * (x > 0)", "grad_output * (x >= 0)", "x > 0, not x >= 0"),
    (
        "relu",
        "return grad_output * (x > 0)",
        "grad_output[x <= 0] = 0\n    return grad_output",
        "you write into an argument",
    ),
    (
        "relu",
        "grad_output * (x > 0)",
        "grad_output * (x > 0).astype(np.float64)",
        ".astype(np.float64) promotes",
    ),
    ("relu", "grad_output * (x > 0)", "(x > 0) * 1.0", "the mask alone"),
    ("softmax", "x - x.max(axis=axis, keepdims=True)", "x - x.max()", "the max of the whole array"),
    ("softmax", "x - x.max(axis=axis, keepdims=True)", "x", "exp of a large input overflows"),
    (
        "softmax",
        "exps / exps.sum(axis=axis, keepdims=True)",
        "exps / exps.sum(axis=-1, keepdims=True)",
        "whatever `axis` says",
    ),
    (
        "softmax",
        "(grad_output * y).sum(axis=axis, keepdims=True)",
        "(grad_output * y).sum()",
        "the sum over the whole array",
    ),
    (
        "softmax",
        "(grad_output * y).sum(axis=axis, keepdims=True)",
        "(grad_output * y).sum(axis=axis)",
        "without keepdims=True",
    ),
    (
        "softmax",
        "return y * (grad_output - (grad_output * y).sum(axis=axis, keepdims=True))",
        "return grad_output - (grad_output * y).sum(axis=axis, keepdims=True)",
        "multiply by y",
    ),
    (
        "log_softmax",
        "shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))",
        "np.log(np.exp(shifted) / np.exp(shifted).sum(axis=axis, keepdims=True))",
        "log(softmax(x))",
    ),
    (
        "log_softmax",
        "grad_output - np.exp(y) * grad_output",
        "grad_output - y * grad_output",
        "with exp(y)",
    ),
    (
        "layer_norm",
        "d_x_hat - mean_d - x_hat * mean_d_x_hat",
        "d_x_hat - mean_d",
        "moves the variance",
    ),
    (
        "layer_norm",
        "d_x_hat - mean_d - x_hat * mean_d_x_hat",
        "d_x_hat - x_hat * mean_d_x_hat",
        "moves the mean",
    ),
    (
        "layer_norm",
        "grad_output.sum(axis=leading)",
        "grad_output.sum()",
        "shape of the last k dims",
    ),
    (
        "batch_norm",
        "momentum * var * count / (count - 1)",
        "momentum * var",
        "keeps the unbiased variance",
    ),
    (
        "batch_norm",
        "        mean, var = running_mean, running_var\n",
        "        mean, var = x.mean(axis=axes), x.var(axis=axes)\n",
        "not with the batch's",
    ),
    (
        "rms_norm",
        "d_x_hat - x * rstd**2 * (d_x_hat * x).mean(axis=axes, keepdims=True)",
        "d_x_hat",
        "the path through r",
    ),
    (
        "matmul",
        "(A[..., :, :, None] * B[..., None, :, :]).sum(axis=-2)",
        "A @ B",
        "no matrix product here",
    ),
    (
        "matmul",
        "return sum_to_shape(grad_A, A.shape), sum_to_shape(grad_B, B.shape)",
        "return grad_A, grad_B",
        "batch dims its operand",
    ),
    ("cross_entropy", "grad * (grad_output / len(targets))", "grad * grad_output", "a 1 / N"),
    (
        "cross_entropy",
        "grad * (grad_output / len(targets))",
        "grad / len(targets)",
        "multiply by grad_output",
    ),
    ("gradient_check", "x = np.array(x, dtype=np.float64)", "x = np.array(x)", "low precision"),
    ("gradient_check", "(above - below) / (2 * h)", "(above - float(f(x))) / h", "one-sided"),
    (
        "conv2d",
        'np.einsum("nfhw,nchw->fc", grad_output, window)',
        'np.einsum("fhw,chw->fc", grad_output[0], window[0])',
        "sum its products over the batch",
    ),
    (
        "conv2d",
        "dx[:, :, p : p + out_h, q : q + out_w] += np.einsum(",
        "dx[:, :, p : p + out_h, q : q + out_w] = np.einsum(",
        "add into dx",
    ),
    (
        "function",
        "return grad_output * (s + x * s * (1 - s))",
        "return s + x * s * (1 - s)",
        "multiply by grad_output",
    ),
    (
        "function",
        "return grad_output * (s + x * s * (1 - s))",
        "return grad_output * s",
        "product rule",
    ),
    ("hvp", "[x], create_graph=True)", "[x])", "create_graph=True"),
    (
        "hvp",
        "(product,) = tg.grad((gradient * v).sum(), [x])",
        "(product,) = tg.grad(gradient.sum(), [x])\n    product = product * v",
        "(H 1) * v is not H v",
    ),
    ("scan_combine", "a @ B + b", "b @ A + a", "you wrote it the other way round"),
    ("scan_combine", "a @ B + b", "a + b", "a B + b, not a + b"),
    (
        "hillis_steele",
        "combine(items[i - step], items[i])",
        "combine(items[i], items[i - step])",
        "earlier element on the left",
    ),
    ("hillis_steele", "        step *= 2", "        step += 1", "double the step"),
    (
        "blelloch",
        "combine(pair_prefixes[i // 2 - 1], items[i])",
        "combine(items[i], pair_prefixes[i // 2 - 1])",
        "earlier element on the left",
    ),
    (
        "blelloch",
        "combine(pair_prefixes[i // 2 - 1], items[i])",
        "combine(pair_prefixes[min(i // 2, len(pair_prefixes) - 1)], items[i])",
        "off by one",
    ),
    (
        "blocked",
        "prefixes = scan(items[start : start + block_size], combine)",
        "prefixes = scan(items, combine)[start : start + block_size]",
        "one scan of the whole",
    ),
    (
        "blocked",
        "        carry = out[-1]",
        "        carry = prefixes[-1] if carry is None else carry",
        "the carry is the last prefix",
    ),
]


def with_mistake(tmp_path, name, right, wrong):
    source = unmarked(solution_source(name))
    assert right in source, f"the mistake's text is no longer in the solution: {right!r}"
    (tmp_path / f"{name}.py").write_text(source.replace(right, wrong, 1), encoding="utf-8")
    return tmp_path


def test_the_solutions_pass_every_check(tmp_path):
    exercises.init(tmp_path, solved=True)
    results = exercises.check(tmp_path, isolated=False)
    assert {result.name for result in results} == set(exercises.EXERCISES)
    failed = [
        (r.name, c.property, c.message) for r in results for c in r.checks if c.status != "pass"
    ]
    assert failed == []
    assert all(result.passed for result in results)


def test_a_blank_fails_every_check_as_not_written(tmp_path):
    exercises.init(tmp_path)
    results = exercises.check(tmp_path, isolated=False)
    assert all(not result.error for result in results)
    assert {check.status for result in results for check in result.checks} == {"not written"}
    assert sum(result.points for result in results) == 0


def test_the_shipped_blanks_are_the_solutions_blanked():
    for name, exercise in exercises.EXERCISES.items():
        shipped = (BLANKS / exercise.filename).read_text(encoding="utf-8")
        assert shipped == blank(solution_source(name)), (
            f"tinygrad_ops/exercises/blanks/{exercise.filename} is stale: run "
            "`python exercises/make_blanks.py` and commit it"
        )


def test_the_solutions_are_not_in_the_installed_package():
    import tinygrad_ops

    package = __import__("pathlib").Path(tinygrad_ops.__file__).parent
    assert not (package / "exercises" / "solutions").exists()
    assert not list(package.rglob("*solution*.py"))


def test_there_are_at_least_30_mistakes_each_of_a_different_hint():
    assert len(MISTAKES) >= 30
    assert len({(name, hint) for name, _, _, hint in MISTAKES}) == len(MISTAKES)


@pytest.mark.parametrize(("name", "right", "wrong", "hint"), MISTAKES)
def test_a_mistake_fails_with_the_hint_that_names_it(tmp_path, name, right, wrong, hint):
    (result,) = exercises.check(with_mistake(tmp_path, name, right, wrong), name, isolated=False)
    assert not result.passed
    assert not result.error, result.error
    hints = [h.text for h in result.hints]
    assert any(hint in text for text in hints), (hint, hints)
    assert runner.NO_DIAGNOSIS not in hints  # every failing function was diagnosed


def test_the_report_states_the_property_and_the_diagnosis(tmp_path):
    with_mistake(tmp_path, "relu", "grad_output * (x > 0)", "grad_output * (x >= 0)")
    text = exercises.report(exercises.check(tmp_path, "relu"))
    assert "FAIL  relu            6/7 checks" in text
    assert "FAIL: dx is 0 where x is exactly 0 (the subgradient PyTorch takes): backward" in text
    assert "hint (backward): at x = 0 you pass the gradient through" in text
    assert "6/7 points" in text


def test_an_error_shows_the_students_own_file_and_line(tmp_path):
    with_mistake(
        tmp_path,
        "softmax",
        "(grad_output * y).sum(axis=axis, keepdims=True)",
        "(grad_output * y).sum(axis=axis)",
    )
    (result,) = exercises.check(tmp_path, "softmax")
    errors = [check for check in result.checks if check.status == "ERROR"]
    assert errors
    assert errors[0].where.startswith("softmax.py line ")
    assert errors[0].where.endswith(": return y * (grad_output - (grad_output * y).sum(axis=axis))")
    assert "operands could not be broadcast" in errors[0].message


def test_a_file_that_does_not_import_is_one_error_with_its_line(tmp_path):
    (tmp_path / "relu.py").write_text("import numpy as np\n\ndef backward(:\n", encoding="utf-8")
    (result,) = exercises.check(tmp_path, "relu")
    assert "SyntaxError" in result.error
    assert "relu.py line 3" in result.error
    assert result.points == 0


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            "from tinygrad_ops.exercises.solutions.softmax import forward, backward",
            "the shipped solutions",
        ),
        ("from exercises.solutions.softmax import forward, backward", "the shipped solutions"),
        ("import torch", "imports torch"),
        ("import tinygrad_ops as tg", "the engine would do the work"),
        ("from tinygrad_ops import functional", "the engine would do the work"),
        ("np2 = __import__('torch')", "uses __import__"),
        ("import importlib", "imports importlib"),
        ("np.allclose = lambda *args, **kwargs: True", "assigns into the module np"),
        ("np.testing.assert_allclose = print", "assigns into the module np"),
        ("setattr(np, 'allclose', all)", "uses setattr"),
        ("caller = lambda error: error.__traceback__.tb_frame.f_back.f_locals", "uses f_locals"),
    ],
)
def test_a_solution_that_imports_the_work_is_refused(tmp_path, line, reason):
    source = unmarked(solution_source("softmax")).replace(
        "import numpy as np\n", f"import numpy as np\n{line}\n"
    )
    (tmp_path / "softmax.py").write_text(source, encoding="utf-8")
    (result,) = exercises.check(tmp_path, "softmax")
    assert result.error.startswith("refused: ")
    assert reason in result.error
    assert result.points == 0
    assert "ERROR: refused" in exercises.report([result])


@pytest.mark.parametrize(
    "product",
    [
        "A @ B",
        "A.__matmul__(B)",
        "np.matmul(A, B)",
        "np.dot(A, B)",
        "A.dot(B)",
        "np.einsum('ik,kj->ij', A, B)",
        "np.tensordot(A, B, 1)",
        "getattr(np, 'matmul')(A, B)",
    ],
)
def test_matmul_loops_without_loops_is_refused_however_the_product_is_spelled(tmp_path, product):
    source = unmarked(solution_source("matmul"))
    start = source.index("    rows, inner = A.shape")
    end = source.index("    return C\n") + len("    return C\n")
    (tmp_path / "matmul.py").write_text(
        source[:start] + f"    return {product}\n" + source[end:], encoding="utf-8"
    )
    (result,) = exercises.check(tmp_path, "matmul", isolated=False)
    rule = result.checks[0]
    assert rule.function == "matmul_loops"
    assert rule.status == "FAIL"
    assert "matrix product" in rule.message or "nested loop" in rule.message
    assert any("definition as loops" in hint.text for hint in result.hints)


def test_a_product_hidden_from_the_source_is_caught_at_run_time(tmp_path):
    source = unmarked(solution_source("matmul"))
    start = source.index("    rows, inner = A.shape")
    end = source.index("    return C\n") + len("    return C\n")
    hidden = (
        "    C = None\n    for i in range(1):\n        for j in range(1):\n"
        '            C = getattr(np, "mat" + "mul")(A, B)\n    return C\n'
    )
    (tmp_path / "matmul.py").write_text(source[:start] + hidden + source[end:], encoding="utf-8")
    (result,) = exercises.check(tmp_path, "matmul", isolated=False)
    assert result.checks[0].status == "FAIL"
    assert "np.matmul" in result.checks[0].message


def test_a_hang_in_a_solution_is_stopped_and_the_other_checks_still_run(tmp_path):
    source = unmarked(solution_source("relu")).replace(
        "    return grad_output * (x > 0)",
        "    if x.ndim == 0:\n        while True:\n            pass\n"
        "    return grad_output * (x > 0)",
    )
    (tmp_path / "relu.py").write_text(source, encoding="utf-8")
    (result,) = exercises.check(tmp_path, "relu", time_limit=2)
    assert result.checks[0].status == "ERROR"
    assert "did not finish within 2 s" in result.checks[0].message
    assert [check.status for check in result.checks[1:]] == ["pass"] * 6


def test_an_exit_or_a_crash_fails_the_check_it_happened_in(tmp_path, monkeypatch):
    # os is refused by the screen; allow it here to end the process from inside a check.
    monkeypatch.setattr(exercises.EXERCISES["relu"], "imports", NUMPY_ONLY | {"os"})
    source = unmarked(solution_source("relu")).replace(
        "    return grad_output * (x > 0)",
        "    if x.ndim == 0:\n        raise SystemExit(0)\n"
        "    if x.dtype == np.float16:\n        import os\n\n        os._exit(3)\n"
        "    return grad_output * (x > 0)",
    )
    (tmp_path / "relu.py").write_text(source, encoding="utf-8")
    (result,) = runner.check(tmp_path, "relu")
    assert result.checks[0].status == "ERROR"
    assert "called sys.exit(0)" in result.checks[0].message
    assert "relu.py line" in result.checks[0].where
    assert result.checks[4].status == "ERROR"
    assert "the process ended (exit code 3) during this check" in result.checks[4].message
    assert result.points == 5  # the checks after the exit ran in a new child


def test_an_exit_at_import_is_one_clear_error(tmp_path):
    (tmp_path / "relu.py").write_text("import numpy as np\nraise SystemExit(0)\n", encoding="utf-8")
    (result,) = exercises.check(tmp_path, "relu")
    assert "called sys.exit(0) while importing" in result.error
    (tmp_path / "relu.py").write_text(
        "import numpy as np\nwhile True:\n    pass\n", encoding="utf-8"
    )
    (result,) = exercises.check(tmp_path, "relu", time_limit=1.5)
    assert "importing the file did not finish within 1.5 s" in result.error


def test_log_softmax_of_softmax_fails_its_stability_property(tmp_path):
    with_mistake(
        tmp_path,
        "log_softmax",
        "shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))",
        "np.log(np.exp(shifted) / np.exp(shifted).sum(axis=axis, keepdims=True))",
    )
    (result,) = exercises.check(tmp_path, "log_softmax", isolated=False)
    failed = [check.property for check in result.checks if check.status != "pass"]
    assert failed == [
        "forward is finite and right 800 below the largest logit (no log of an underflowed 0)"
    ]


@pytest.mark.parametrize(
    ("body", "hint"),
    [
        ("    return scan(list(elements), combine)\n", "one scan of the whole"),
        (
            "    out = list(elements[:1])\n    for item in elements[1:]:\n"
            "        out.append(combine(out[-1], item))\n    return out\n",
            "a plain fold never blocks",
        ),
    ],
)
def test_a_blocked_scan_that_never_blocks_fails(tmp_path, body, hint):
    source = unmarked(solution_source("blocked"))
    start = source.index("    items = list(elements)")
    (tmp_path / "blocked.py").write_text(source[:start] + body, encoding="utf-8")
    (result,) = exercises.check(tmp_path, "blocked", isolated=False)
    assert result.checks[0].status == "FAIL"
    assert any(hint in h.text for h in result.hints)


def test_a_missing_file_is_one_error_saying_how_to_write_it(tmp_path):
    (result,) = exercises.check(tmp_path, "value")
    assert result.error == (
        f"value.py does not exist: write it with `tinygrad-ops exercises init {tmp_path} value`"
    )
    assert exercises.report([result]).splitlines()[:2] == [
        "FAIL  value           0/14 checks",
        f"      ERROR: {result.error}",
    ]


def test_solved_outside_a_checkout_says_where_the_solutions_are(tmp_path, monkeypatch, capsys):
    from tinygrad_ops.exercises import files

    monkeypatch.setattr(files, "SOLUTIONS", tmp_path / "no_checkout" / "exercises" / "solutions")
    assert main(["exercises", "init", str(tmp_path / "out"), "relu", "--solved"]) == 2
    assert "the solutions are not installed with the package" in capsys.readouterr().err
    assert main(["exercises", "init", str(tmp_path / "out"), "relu"]) == 0  # the blanks are


def test_init_keeps_a_students_work(tmp_path):
    exercises.init(tmp_path, ["relu"])
    with pytest.raises(FileExistsError, match="--force"):
        exercises.init(tmp_path, ["relu"])
    with pytest.raises(ValueError, match="unknown exercise"):
        exercises.init(tmp_path, ["relux"])


def test_the_command_line(tmp_path, capsys):
    assert main(["exercises", "init", str(tmp_path), "--solved"]) == 0
    assert f"wrote {len(exercises.EXERCISES)} solved exercise files" in capsys.readouterr().out
    assert main(["exercises", "check", str(tmp_path), "softmax", "--time-limit", "30"]) == 0
    assert "PASS  softmax" in capsys.readouterr().out
    blank_folder = tmp_path / "blank"
    assert main(["exercises", "init", str(blank_folder), "matmul"]) == 0
    capsys.readouterr()
    assert main(["exercises", "check", str(blank_folder), "matmul"]) == 1
    assert "not written yet" in capsys.readouterr().out
    assert main(["exercises", "check", str(blank_folder), "nope"]) == 2
    capsys.readouterr()
    assert main(["exercises", "check", str(tmp_path / "missing")]) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.count("\n") == 1
    assert "is not a folder" in printed.err


def test_check_json_gives_points_per_exercise(tmp_path, capsys):
    exercises.init(tmp_path, ["relu", "tape"], solved=True)
    with_mistake(tmp_path, "relu", "grad_output * (x > 0)", "grad_output * (x >= 0)")
    assert main(["exercises", "check", str(tmp_path), "relu", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    (entry,) = report["exercises"]
    assert (entry["name"], entry["points"], entry["max_points"], entry["passed"]) == (
        "relu",
        6,
        7,
        False,
    )
    assert report["points"] == 6
    assert entry["checks"][5]["status"] == "FAIL"
    assert entry["hints"][0]["function"] == "backward"
    assert main(["exercises", "check", str(tmp_path), "tape", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exercises"][0]["passed"] is True
