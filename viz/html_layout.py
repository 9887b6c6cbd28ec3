"""A layered layout for the HTML page: inputs at the top, the loss at the bottom.

The classic recipe of layered graph drawing (Sugiyama, Tagawa and Toda, 1981) in its
simplest form: each node's layer is the length of the longest path that reaches it, then
each node that feeds others moves down to just above its first consumer; within a layer,
nodes are ordered by the mean position of their neighbours (the barycentre heuristic),
sweeping down and up a few times; then each layer is packed left to right and centred.
"""

from __future__ import annotations

LAYER_HEIGHT = 78  # pixels from one layer's centre line to the next
GAP = 26  # pixels between two nodes of one layer
MARGIN = 40
SWEEPS = 4


def _layers(node_ids, edges):
    """The layer of every node: 1 + the deepest producer's layer, then as low as its
    consumers allow."""
    predecessors = {node_id: [] for node_id in node_ids}
    successors = {node_id: [] for node_id in node_ids}
    for source, target in edges:
        predecessors[target].append(source)
        successors[source].append(target)
    # Kahn's order (iterative): a node once all its producers have been placed.
    waiting = {node_id: len(predecessors[node_id]) for node_id in node_ids}
    ready = [node_id for node_id in node_ids if waiting[node_id] == 0]
    layer, order = {}, []
    while ready:
        node_id = ready.pop()
        order.append(node_id)
        layer[node_id] = 1 + max((layer[p] for p in predecessors[node_id]), default=-1)
        for target in successors[node_id]:
            waiting[target] -= 1
            if waiting[target] == 0:
                ready.append(target)
    for node_id in node_ids:  # on a cycle made by collapsing a module call: below the rest
        if node_id not in layer:
            layer[node_id] = 1 + max(layer.values(), default=-1)
    # Then every node that feeds others moves down to just above its first consumer (an
    # RNN step's x_t @ W sits beside its step, not in the top row with every other step's).
    for node_id in reversed(order):
        below = [layer[target] for target in successors[node_id]]
        if below:
            layer[node_id] = min(below) - 1
    return layer, predecessors, successors


def _order(rows, neighbours_above, neighbours_below):
    """Barycentre sweeps: each row sorted by the mean index of its neighbours."""
    index = {node_id: i for row in rows for i, node_id in enumerate(row)}

    def sort_by(row, neighbours):
        def key(node_id):
            found = [index[other] for other in neighbours[node_id] if other in index]
            return sum(found) / len(found) if found else index[node_id]

        row.sort(key=key)
        for i, node_id in enumerate(row):
            index[node_id] = i

    for _ in range(SWEEPS):
        for row in rows[1:]:
            sort_by(row, neighbours_above)
        for row in reversed(rows[:-1]):
            sort_by(row, neighbours_below)
    return rows


def layered_layout(widths, edges):
    """Centre (x, y) in pixels of every node; `widths` maps node id -> width, in the
    order nodes were made (ties keep it), `edges` are (source, target) pairs.

    >>> layered_layout({"a": 20, "b": 20, "c": 20}, [("a", "c"), ("b", "c")])
    {'a': (50.0, 40), 'b': (96.0, 40), 'c': (73.0, 118)}
    """
    node_ids = list(widths)
    layer, predecessors, successors = _layers(node_ids, edges)
    depth = max(layer.values(), default=0) + 1
    rows = [[] for _ in range(depth)]
    for node_id in node_ids:
        rows[layer[node_id]].append(node_id)
    rows = _order(rows, predecessors, successors)
    row_widths = [sum(widths[n] for n in row) + GAP * max(len(row) - 1, 0) for row in rows]
    widest = max(row_widths, default=0)
    positions = {}
    for number, row in enumerate(rows):
        x = MARGIN + (widest - row_widths[number]) / 2
        for node_id in row:
            positions[node_id] = (x + widths[node_id] / 2, MARGIN + number * LAYER_HEIGHT)
            x += widths[node_id] + GAP
    return positions
