"""``python -m randsvm_dist.cli ...``: the same as the ``randsvm-dist`` console script."""

import sys

from . import main

sys.exit(main())
