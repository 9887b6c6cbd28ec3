"""`python -m tinygrad_ops ...` runs the `tinygrad-ops` command."""

import sys

from .cli import main

sys.exit(main())
