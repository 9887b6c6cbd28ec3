"""`tg.compile`: a tracing JIT that captures a training step once and replays it.

    capture   the recorder: watches one eager call and writes the program
    kernels   the program's steps: an op's forward or backward rule, a leaf write, a call
    program   slots, kernels in order, the replay loop, the listing `print(step.program)`
    guards    what a program assumed, checked at every call
    compiled  `compile` and `CompiledFunction`: the cache of programs keyed by their guards

docs/compile.md explains what is cached, what invalidates a program and what is frozen.
"""

from .capture import CompileError
from .compiled import CompiledFunction, compile

__all__ = ["CompileError", "CompiledFunction", "compile"]
