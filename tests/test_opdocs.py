"""docs/ops.md lists every op with its one-line rule, and is what tinygrad_ops.opdocs writes."""

from pathlib import Path

import pytest

from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)
from tinygrad_ops import opdocs, ops

OPS_MD = Path(__file__).resolve().parent.parent / "docs" / "ops.md"


def test_docs_ops_md_is_current():
    expected = opdocs.render() + "\n"
    assert OPS_MD.read_text(encoding="utf-8") == expected, (
        f"docs/ops.md is stale: run `{opdocs.COMMAND}` from the repository root and commit it"
    )


def test_every_primitive_method_and_function_is_listed():
    text = OPS_MD.read_text(encoding="utf-8")
    for op in ops.PRIMITIVES:
        assert f"| `{op.__name__}` |" in text
    for name in F.__all__:
        assert f"| `F.{name}` |" in text
    for name in ("gather", "sort", "flip", "__add__", "exp", "reshape"):
        assert f"| `Tensor.{name}` |" in text


def test_an_op_without_a_rule_is_an_error_that_says_what_to_do():
    with pytest.raises(opdocs.MissingRuleError, match="docstring"):
        opdocs._table("Tensor methods", {"frobnicate": None})


def test_a_table_cell_keeps_its_bars_escaped():
    lines = opdocs._table("t", {"abs": "out = |a|"})
    assert "| `abs` | out = \\|a\\| |" in lines


def test_main_writes_the_file(tmp_path, capsys):
    opdocs.main([str(tmp_path / "ops.md")])
    assert (tmp_path / "ops.md").read_text(encoding="utf-8") == opdocs.render() + "\n"
    assert "wrote" in capsys.readouterr().out
