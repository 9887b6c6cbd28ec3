"""`auto`'s walks remembered per graph shape, so that looking is not paid on every step.

A training loop builds the same graph every step. Where `auto` walked it without a scan
(its gate found the graph too shallow or too wide to pay, the first look refused a chain
too short, or the chains it found were walked: the model's choice, or what `auto` measured
settled on the walk), the gate and the look cost something on every step for nothing:
on a small MLP the gate's walk down the graph alone took 1.1-1.2x the walk's time
(docs/scan.md, "The cost model"). So the verdict is kept per *graph shape*, read without
walking the graph: the class of the op that made the output, the output's shape, and how
many ops were recorded since the previous backward that `auto` ran (a training step's
forward pass: the same count every step). A backward whose shape was walked before is
walked at once; every `REFRESH`-th backward of a shape is decided afresh, and a shape
decided afresh that scans is forgotten. The gradients are the walk's either way (every
scheduler is tested against it): a shape mistaken for another can cost only speed.
"""

REFRESH = 16
"""Every REFRESH-th backward of a remembered shape runs the gate and the look again (what
changes: the graph behind the same output, or what `auto` measured)."""

SIZE = 64  # shapes remembered (the oldest forgotten first)


class ShapeVerdicts:
    """Per graph shape, why the backwards of that shape were walked.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops.autograd import BackwardGraph
    >>> verdicts = ShapeVerdicts()
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> for step in range(3):  # the same graph, three steps
    ...     graph = BackwardGraph([(x * x).sum()], None, False, True)
    ...     shape = verdicts.shape_of(graph)
    ...     seen = verdicts.lookup(shape)
    ...     verdicts.remember(shape, "the graph is not 24 ops deep")
    >>> seen
    'the graph is not 24 ops deep'
    """

    def __init__(self):
        self.walked = {}  # shape -> [why it was walked, backwards since]
        self.newest = None  # the creation number of the output of the latest backward

    def shape_of(self, graph, advance=True):
        """The shape of `graph` (None: one that is not remembered, several outputs or
        `tg.grad` inputs); with `advance`, this output becomes the latest seen."""
        if len(graph.roots) != 1 or graph.wanted is not None:
            return None
        root = graph.roots[0]
        node = root._ctx
        if node is None:
            return None
        newest = self.newest
        if advance:
            self.newest = node.sequence
        made = None if newest is None else node.sequence - newest
        return None if made is None else (type(node), root.shape, made)

    def lookup(self, shape, count=True):
        """Why backwards of this shape were walked, or None (not remembered, or due to be
        decided afresh: every REFRESH-th; with `count` False, only read)."""
        entry = self.walked.get(shape) if shape is not None else None
        if entry is None:
            return None
        if not count:
            return entry[0]
        entry[1] += 1
        if entry[1] % REFRESH == 0:
            return None
        return entry[0]

    def remember(self, shape, reason):
        """Backwards of this shape are walked from now on (see `lookup`), for `reason`."""
        if shape is None:
            return
        entry = self.walked.pop(shape, None)  # re-inserted: the newest forgotten last
        self.walked[shape] = [reason, 0 if entry is None else entry[1]]
        while len(self.walked) > SIZE:
            del self.walked[next(iter(self.walked))]

    def forget(self, shape):
        """A backward of this shape was scanned: it is decided afresh every time again."""
        self.walked.pop(shape, None)
