"""The blocked scan: blocks of `block_size` elements, one after the other.

    carry = nothing
    for each block of block_size elements, in order:
        scan the block in parallel (Blelloch, blelloch.py) -> its own prefixes
        prefix out[i] of the whole list = carry · (the block's prefix at i)
        carry = the last of those

The work in flight (and the memory of a caller that builds elements block by block) is
bounded by the block size; combines stay O(n). `scan` is the in-block scan to use.
"""


def blocked(elements, combine, block_size, scan):
    """The list of inclusive prefixes of `elements`; `scan(block, combine)` scans a block."""
    # BEGIN SOLUTION
    items = list(elements)
    out = []
    carry = None
    for start in range(0, len(items), block_size):
        prefixes = scan(items[start : start + block_size], combine)
        if carry is not None:
            prefixes = [combine(carry, prefix) for prefix in prefixes]
        out.extend(prefixes)
        carry = out[-1]
    return out
    # END SOLUTION
