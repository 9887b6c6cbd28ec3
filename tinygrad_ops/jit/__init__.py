"""`tg.compile`: a tracing JIT that captures a training step once and replays it.

capture (the recorder on the engine's seam, `mode.Trace`), kernels (the program's steps),
inline, fused and fused_optim (the ops' and optimizers' own methods written out), stacks
and scan_kernel (compiled scans), program (slots, memory plan, listing), codegen (the one
generated function), guards, compiled (`compile` itself). docs/compile.md explains it.
"""

from .capture import CompileError
from .compiled import CompiledFunction, compile

__all__ = ["CompileError", "CompiledFunction", "compile"]
