"""The loss and accuracy curves of a training run as an SVG picture, written by hand.

An SVG is text: a rectangle, a few lines, a polyline per curve and the labels. Writing it
takes about a millisecond; matplotlib's import and drawing took 0.6-0.9 s of every
`tinygrad-ops train` run, more than the training of the default MLP (`--plot-format png`
still draws the PNG with matplotlib). The layout follows matplotlib's defaults: two panels
side by side, a grid, the ticks at "nice" numbers, its first two colours.
"""

from __future__ import annotations

import math
from html import escape

WIDTH, HEIGHT = 900, 350
# Each panel's plotting area, inside its panel: room on the left for the tick labels and
# the axis label, below for the epochs, above for the panel title.
LEFT, RIGHT, TOP, BOTTOM = 70, 15, 55, 50
COLOURS = {"train": "#1f77b4", "validation": "#ff7f0e"}  # matplotlib's first two colours
FONT = 'font-family="DejaVu Sans, Verdana, sans-serif"'


def nice_ticks(low, high, count=6):
    """About `count` round tick values covering [low, high]: steps of 1, 2 or 5 times a
    power of ten (Heckbert, "Nice numbers for graph labels", Graphics Gems, 1990).

    >>> nice_ticks(0.0, 1.07)
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2]
    >>> nice_ticks(1, 20)
    [0, 5, 10, 15, 20]
    """
    if high <= low:
        low, high = low - 0.5, high + 0.5
    rough = (high - low) / (count - 1)
    power = 10 ** math.floor(math.log10(rough))
    fraction = rough / power
    # Heckbert's rounding: the step nearest the rough one among 1, 2, 5 and 10 x power.
    step = power * (1 if fraction < 1.5 else 2 if fraction < 3 else 5 if fraction < 7 else 10)
    first, last = math.floor(low / step), math.ceil(high / step)
    ticks = [round(index * step, 10) for index in range(first, last + 1)]
    if all(float(tick).is_integer() for tick in ticks) and float(step).is_integer():
        return [int(tick) for tick in ticks]
    return ticks


def _label(value, ticks):
    """A tick's text with as many decimals as the step between ticks needs."""
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 1
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step < 1 else 0
    if step < 1 and not math.isclose(round(step, decimals), step):
        decimals += 1
    return f"{value:.{decimals}f}"


class Panel:
    """One plotting area: maps data to pixels and writes its SVG elements."""

    def __init__(self, left, width, x_values, y_values):
        self.left, self.right = left + LEFT, left + width - RIGHT
        self.top, self.bottom = TOP, HEIGHT - BOTTOM
        self.x_ticks = nice_ticks(min(x_values), max(x_values))
        self.y_ticks = nice_ticks(min(y_values), max(y_values))
        # Data limits as matplotlib sets them: the data's range and a 5% margin each side.
        self.x_range = _padded(min(x_values), max(x_values))
        self.y_range = _padded(min(y_values), max(y_values))
        self.x_ticks = [t for t in self.x_ticks if self.x_range[0] <= t <= self.x_range[1]]
        self.y_ticks = [t for t in self.y_ticks if self.y_range[0] <= t <= self.y_range[1]]

    def x(self, value):
        low, high = self.x_range
        return self.left + (value - low) / (high - low) * (self.right - self.left)

    def y(self, value):
        low, high = self.y_range
        return self.bottom - (value - low) / (high - low) * (self.bottom - self.top)

    def axes(self, title, x_label, y_label):
        """The frame, the grid, the ticks and their labels, the titles."""
        parts = []
        for tick in self.x_ticks:
            x = self.x(tick)
            parts.append(_line(x, self.top, x, self.bottom, "#b0b0b0", 0.8, 0.3))
            parts.append(_line(x, self.bottom, x, self.bottom + 4, "black", 0.8))
            parts.append(_text(x, self.bottom + 18, _label(tick, self.x_ticks), "middle"))
        for tick in self.y_ticks:
            y = self.y(tick)
            parts.append(_line(self.left, y, self.right, y, "#b0b0b0", 0.8, 0.3))
            parts.append(_line(self.left - 4, y, self.left, y, "black", 0.8))
            parts.append(_text(self.left - 7, y + 4, _label(tick, self.y_ticks), "end"))
        parts.append(
            f'<rect x="{self.left}" y="{self.top}" width="{self.right - self.left}" '
            f'height="{self.bottom - self.top}" fill="none" stroke="black" stroke-width="0.8"/>'
        )
        middle_x, middle_y = (self.left + self.right) / 2, (self.top + self.bottom) / 2
        parts.append(_text(middle_x, self.top - 10, title, "middle", size=14))
        parts.append(_text(middle_x, self.bottom + 38, x_label, "middle"))
        parts.append(
            f'<text x="{self.left - 48}" y="{middle_y:.1f}" {FONT} font-size="12" '
            f'text-anchor="middle" transform="rotate(-90 {self.left - 48} {middle_y:.1f})">'
            f"{escape(y_label)}</text>"
        )
        return parts

    def curve(self, x_values, y_values, colour):
        """A polyline through the points; a NaN or infinite value (a diverged run) leaves a
        gap, as in matplotlib."""
        runs, run = [], []
        for x, y in zip(x_values, y_values):
            if math.isfinite(y):
                run.append(f"{self.x(x):.1f},{self.y(y):.1f}")
            elif run:
                runs.append(run)
                run = []
        runs.append(run)
        return "\n".join(
            f'<polyline points="{" ".join(run)}" fill="none" stroke="{colour}" stroke-width="1.5"/>'
            for run in runs
            if run
        )

    def legend(self, curves):
        """The legend box, in the corner where the curves leave the most room."""
        width, height = 120, 12 + 21 * len(curves)
        corners = {
            (self.right - width - 8, self.top + 8),
            (self.right - width - 8, self.bottom - height - 8),
            (self.left + 8, self.top + 8),
            (self.left + 8, self.bottom - height - 8),
        }

        def crowding(corner):
            x0, y0 = corner
            return sum(
                x0 - 10 <= self.x(x) <= x0 + width + 10 and y0 - 10 <= self.y(y) <= y0 + height + 10
                for _, xs, ys in curves
                for x, y in zip(xs, ys)
                if math.isfinite(y)
            )

        x0, y0 = min(sorted(corners), key=crowding)
        parts = [
            f'<rect x="{x0}" y="{y0}" width="{width}" height="{height}" rx="3" fill="white" '
            f'fill-opacity="0.8" stroke="#cccccc"/>'
        ]
        for row, (name, _, _) in enumerate(curves):
            y = y0 + 16 + 21 * row
            parts.append(_line(x0 + 8, y, x0 + 36, y, COLOURS[name], 1.5))
            parts.append(_text(x0 + 44, y + 4, name, "start"))
        return parts


def _padded(low, high):
    if high <= low:
        low, high = low - 0.5, high + 0.5
    margin = 0.05 * (high - low)
    return low - margin, high + margin


def _line(x1, y1, x2, y2, colour, width, opacity=1.0):
    return (
        f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{colour}" '
        f'stroke-width="{width}" stroke-opacity="{opacity}"/>'
    )


def _text(x, y, text, anchor, size=12):
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" {FONT} font-size="{size}" text-anchor="{anchor}">'
        f"{escape(text)}</text>"
    )


def history_svg(history, title=""):
    """The SVG text of the two panels: loss and accuracy per epoch, training and validation.

    >>> history = {"train_loss": [1.0, 0.5], "validation_loss": [1.1, 0.7],
    ...            "train_accuracy": [0.6, 0.8], "validation_accuracy": [0.5, 0.7]}
    >>> svg = history_svg(history, title="moons")
    >>> svg.startswith("<svg") and svg.count("<polyline") == 4
    True
    """
    epochs = list(range(1, len(history["train_loss"]) + 1))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
    ]
    if title:
        parts.append(_text(WIDTH / 2, 18, title, "middle", size=10))
    panels = (("loss", "cross-entropy"), ("accuracy", "accuracy"))
    for index, (name, y_label) in enumerate(panels):
        curves = [(part, epochs, history[f"{part}_{name}"]) for part in ("train", "validation")]
        values = [value for _, _, ys in curves for value in ys if math.isfinite(value)] or [0, 1]
        panel = Panel(index * WIDTH / 2, WIDTH / 2, epochs, values)
        parts.extend(panel.axes(name, "epoch", y_label))
        parts.extend(panel.curve(xs, ys, COLOURS[part]) for part, xs, ys in curves)
        parts.extend(panel.legend(curves))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def plot_history_svg(history, path, title=""):
    """Write `history_svg` to `path`; returns the path."""
    with open(path, "w", encoding="utf-8") as file:
        file.write(history_svg(history, title))
    return path
