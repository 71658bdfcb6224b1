"""``python -m randsvm_dist.cli ...``: the same as the ``randsvm-dist`` console script."""

import sys

from randsvm_dist.cli import main

sys.exit(main())
