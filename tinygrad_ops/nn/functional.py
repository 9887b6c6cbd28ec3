"""`tg.nn.functional` is `tinygrad_ops.functional`, as `torch.nn.functional` (so that
`import tinygrad_ops.nn.functional as F` and `tg.nn.functional.relu` work): importing this
module hands back that one module, not a copy of its names.

>>> import tinygrad_ops as tg
>>> tg.nn.functional is tg.functional
True
"""

import sys

from .. import functional

sys.modules[__name__] = functional
