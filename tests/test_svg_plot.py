"""The training curves written as SVG by hand (cli/svg_plot.py): valid XML, every curve,
round ticks, gaps for values that are not finite, text escaped."""

import math
import xml.etree.ElementTree as ElementTree

import pytest

from tinygrad_ops.cli import svg_plot

SVG = "{http://www.w3.org/2000/svg}"


def _history(epochs=5):
    return {
        "train_loss": [1.0 / (1 + e) for e in range(epochs)],
        "validation_loss": [1.2 / (1 + e) for e in range(epochs)],
        "train_accuracy": [0.5 + 0.1 * e for e in range(epochs)],
        "validation_accuracy": [0.45 + 0.1 * e for e in range(epochs)],
    }


def _texts(root):
    return [element.text for element in root.iter(f"{SVG}text")]


def test_the_picture_is_xml_with_both_panels_and_their_labels():
    root = ElementTree.fromstring(svg_plot.history_svg(_history(), title="digits: a > b & c"))
    assert len(list(root.iter(f"{SVG}polyline"))) == 4
    texts = _texts(root)
    for label in ("loss", "accuracy", "cross-entropy", "epoch", "train", "validation"):
        assert label in texts
    assert "digits: a > b & c" in texts  # escaped in the file, read back as written


def test_each_curve_passes_through_its_points_in_order():
    history = _history(4)
    root = ElementTree.fromstring(svg_plot.history_svg(history))
    train_loss = next(iter(root.iter(f"{SVG}polyline")))
    ys = [float(point.split(",")[1]) for point in train_loss.get("points").split()]
    assert len(ys) == 4
    assert ys == sorted(ys)  # a falling loss goes down the picture: y grows


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [(0.0, 1.07, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2]), (1, 20, [0, 5, 10, 15, 20])],
)
def test_ticks_are_round_numbers_covering_the_range(low, high, expected):
    assert svg_plot.nice_ticks(low, high) == expected


def test_a_range_of_one_value_still_gets_ticks():
    ticks = svg_plot.nice_ticks(0.5, 0.5)
    assert ticks[0] <= 0.5 <= ticks[-1]
    assert len(ticks) > 1


def test_a_value_that_is_not_finite_leaves_a_gap():
    history = _history(5)
    history["train_loss"][2] = math.nan
    history["validation_loss"] = [math.inf] * 5
    root = ElementTree.fromstring(svg_plot.history_svg(history))
    lines = [p.get("points").split() for p in root.iter(f"{SVG}polyline")]
    assert [len(points) for points in lines[:2]] == [2, 2]  # train loss: two runs around it
    for points in lines:
        for point in points:
            assert all(math.isfinite(float(v)) for v in point.split(","))


def test_the_file_is_written(tmp_path):
    path = tmp_path / "training.svg"
    assert svg_plot.plot_history_svg(_history(), path, title="t") == path
    assert path.read_text(encoding="utf-8").startswith("<svg")
