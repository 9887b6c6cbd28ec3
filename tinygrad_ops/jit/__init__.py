"""`tg.compile`: a tracing JIT that captures a training step once and replays it.

    capture      the recorder: watches one eager call and writes the program
    kernels      the program's steps: an op's forward or backward rule, a leaf write, a call
    codegen      the kernels written out as one Python function (`step.program.source`)
    rules        the fused rules: the common ops' forward and gradients as lines of numpy
    fused        the fused kernels made from them, and the pass that chooses them
    fused_optim  zero_grad(), SGD's and Adam's step written out parameter by parameter
    scan_kernel  a scanned chain, replayed by the scan scheduler's own segment run
    program      slots, kernels in order, the memory plan, the listing `print(step.program)`
    guards       what a program assumed, checked at every call (one generated function)
    compiled     `compile` and `CompiledFunction`: the cache of programs keyed by their guards

docs/compile.md explains what is cached, what invalidates a program and what is frozen.
"""

from .capture import CompileError
from .compiled import CompiledFunction, compile

__all__ = ["CompileError", "CompiledFunction", "compile"]
