"""The reference walk: every tensor once, in reverse topological order."""


class SequentialScheduler:
    """Visit each tensor after all its consumers, one node at a time (depth n for a chain)."""

    name = "sequential"

    def run(self, graph):
        for tensor in reversed(graph.order):
            grad = graph.pop_grad(tensor)
            if grad is not None:
                graph.visit(tensor, grad)
