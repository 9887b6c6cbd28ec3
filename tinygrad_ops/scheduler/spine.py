"""One walk down the graph from an output, shared by the chain finder's first look and
`auto`'s probes (how wide the tensors near the output are, how deep the graph goes).

A chain's tensors each lead on to further ops (x_{i-1} is made from x_{i-2}); the side
inputs of a step (x_t @ W, a bias) do not, or not for long. So at every node the walk
follows the input made most recently among those that lead on to further ops, whatever
the order in which the step's operands were written (`h @ U + x_t @ W`,
`x_t @ W + h @ U`, a residual `h + f(h)`); when no input leads on it takes the newest
input made by an op, and then ends.
"""


def _leads_on(node):
    """Whether some input of `node` that needs a gradient was made by an op."""
    for operand, needs in zip(node.inputs, node.needs_input_grad):
        if needs and operand._ctx is not None:
            return True
    return False


def next_down(node):
    """The input of `node` that the walk follows (None: the walk ends at `node`)."""
    following = None
    following_sequence = -1
    fallback = None
    fallback_sequence = -1
    for operand, needs in zip(node.inputs, node.needs_input_grad):
        operand_node = operand._ctx if needs else None
        if operand_node is None:
            continue
        sequence = operand_node.sequence
        if sequence > following_sequence and _leads_on(operand_node):
            following, following_sequence = operand, sequence
        if sequence > fallback_sequence:
            fallback, fallback_sequence = operand, sequence
    return following if following is not None else fallback


def descend(root, limit):
    """The tensors of the walk down from `root` (itself first), at most `limit` of them.

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([0.5], requires_grad=True)
    >>> y = x.tanh().exp()
    >>> [tensor is y for tensor in descend(y, 10)]
    [True, False]
    """
    tensor = root
    count = 0
    while count < limit:
        yield tensor
        count += 1
        node = tensor._ctx
        if node is None:
            return
        tensor = next_down(node)
        if tensor is None:
            return


def walked_down(root, bound, walks=None):
    """The tensors of the walk down from `root`, at least `bound` of them where the graph
    is that deep; with `walks` (a dict), kept there by id and reused (extended from its
    last tensor when a longer walk is asked for: the walk depends only on where it is)."""
    kept = walks.get(id(root)) if walks is not None else None
    if kept is None:
        walked = list(descend(root, bound))
    else:
        walked, kept_bound = kept
        if len(walked) >= bound or len(walked) < kept_bound:  # long enough, or all of it
            return walked
        walked = walked + list(descend(walked[-1], bound - len(walked) + 1))[1:]
    if walks is not None:
        walks[id(root)] = (walked, bound)
    return walked


def deeper_than(roots, count, walks=None, at_least=128):
    """Whether the walk down from one of `roots` passes more than `count` ops. With
    `walks` (a dict), each root's walk (at least `at_least` tensors where the graph is
    that deep) is kept there by id, for the first look (`window_from`)."""
    for root in roots:
        bound = count + 2 if walks is None else max(count + 2, at_least)
        if len(walked_down(root, bound, walks)) - 1 > count:
            return True
    return False


def window_from(walks, root, limit):
    """The first `limit` tensors of the walk down from `root` kept by `deeper_than`
    (None when it was not kept, or stopped short of `limit` at its own bound)."""
    kept = walks.get(id(root)) if walks else None
    if kept is None:
        return None
    walked, bound = kept
    if len(walked) >= limit or len(walked) < bound:  # long enough, or the whole walk
        return walked[:limit]
    return None


def probe_shape(roots, hops=32, walks=None, at_least=128):
    """(shape, kind): the shape of the widest tensor made by an op that the walk down from
    `roots` reads within `hops` ops (None if there is none), and "dense" if an op on the
    walk has a dense Jacobian through the input it follows (a matrix product on the
    chain), else "diagonal". With `walks`, the walk (`at_least` tensors long, what the
    first look reads) is kept for `deeper_than` and the first look."""
    widest = None
    widest_size = -1
    kind = "diagonal"
    for root in roots:
        walked = walked_down(root, hops if walks is None else max(hops, at_least), walks)
        for position, tensor in enumerate(walked[:hops]):
            node = tensor._ctx
            if node is None:
                break
            # The walk's next tensor is the input it follows (`next_down`).
            following = walked[position + 1] if position + 1 < len(walked) else next_down(node)
            for index, (operand, needs) in enumerate(zip(node.inputs, node.needs_input_grad)):
                if not needs or operand._ctx is None:
                    continue
                if operand is following and node.jacobian_kind(index) == "dense":
                    kind = "dense"
                if operand.data.size > widest_size:
                    widest, widest_size = operand.data.shape, operand.data.size
    return widest, kind
