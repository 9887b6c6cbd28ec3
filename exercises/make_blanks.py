"""Write tinygrad_ops/exercises/blanks/ (what the package ships) from exercises/solutions/.

    python exercises/make_blanks.py      # from the repository root; commit the result

Every region between `# BEGIN SOLUTION` and `# END SOLUTION` becomes a NotImplementedError
(tinygrad_ops/exercises/files.py); tests/test_exercises.py fails when the blanks are stale.
"""

import sys

from tinygrad_ops.exercises.files import BLANKS, write_blanks

if __name__ == "__main__":
    print(f"wrote {len(write_blanks())} blank exercise files into {BLANKS}")
    sys.exit(0)
