"""The reference walk: every tensor once, after all its consumers, one node at a time."""


class SequentialScheduler:
    """The walk (depth n for a chain of n nodes), which lives on the graph
    (`BackwardGraph.run_sequential`) so that every other scheduler falls back to it."""

    name = "sequential"

    def run(self, graph):
        graph.run_sequential()
