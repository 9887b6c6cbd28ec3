"""A compiled program as a Graphviz picture: its kernels in order, its slots as edges.

Each kernel of `step.program` (tg.compile) is a box, coloured by its phase (forward,
backward, update), labelled as `print(step.program)` lists it; an edge runs from the
kernel that writes a slot to each kernel that reads it, labelled with the slot and its
shape. The arguments, captured tensors and constants the program reads are ellipses.
The boxes run top down in the order the replay runs them.
"""

from __future__ import annotations

import graphviz

from .style import FONT

PHASE_COLOURS = {"forward": "#dae8fc", "backward": "#f8cecc", "update": "#d5e8d4"}
SOURCE_COLOURS = {"input": "#ffe6cc", "captured": "#fff2cc", "constant": "#f5f5f5"}


def draw_program(program, rankdir="TB") -> graphviz.Digraph:
    """The kernels of `program` (a compiled function's `.program`) and the slots between.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import viz
    >>> w = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> @tg.compile
    ... def step(x):
    ...     loss = (w * x).sum()
    ...     loss.backward()
    ...     return loss
    >>> _ = step(tg.Tensor([1.0, 1.0]))
    >>> "Mul.forward" in viz.draw_program(step.program).source
    True
    """
    picture = graphviz.Digraph(program.name, graph_attr={"rankdir": rankdir, "fontname": FONT})
    picture.attr("node", fontname=FONT, fontsize="10")
    picture.attr("edge", fontname=FONT, fontsize="8")
    name = program.name_of
    writer = {}  # slot -> the node that last wrote it
    previous = None
    for number, slot in enumerate(program.slots):
        if slot.kind in SOURCE_COLOURS:
            node = f"slot{number}"
            label = f"{name(number)} {slot.label}"
            picture.node(node, label, shape="ellipse", style="filled",
                         fillcolor=SOURCE_COLOURS[slot.kind])  # fmt: skip
            writer[number] = node
    for number, (kernel, phase) in enumerate(zip(program.kernels, program.phases)):
        node = f"kernel{number}"
        label = f"{number}  {kernel.describe(name)}"
        picture.node(node, label, shape="box", style="rounded,filled",
                     fillcolor=PHASE_COLOURS.get(phase, "#ffffff"))  # fmt: skip
        for slot in kernel.reads():
            if slot in writer:
                picture.edge(writer[slot], node, label=_slot_label(program, slot))
        for slot in kernel.writes():
            writer[slot] = node
        if previous is not None:  # (unseen: keeps the boxes in program order, top down)
            picture.edge(previous, node, style="invis")
        previous = node
    return picture


def _slot_label(program, slot) -> str:
    shape = program.slots[slot].shape
    return program.name_of(slot) if shape is None else f"{program.name_of(slot)} {shape}"
