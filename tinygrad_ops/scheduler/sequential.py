"""The reference walk: every tensor once, after all its consumers, one node at a time."""


class SequentialScheduler:
    """Visit the pending tensors one node at a time (depth n for a chain of n nodes).

    The walk itself lives on the graph (`BackwardGraph.run_sequential`), so that every
    other scheduler can fall back to it for the parts it does not scan.
    """

    name = "sequential"

    def run(self, graph):
        graph.run_sequential()
