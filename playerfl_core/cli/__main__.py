"""``python -m playerfl_core.cli``: the ``playerfl`` command where it is not installed."""

import sys

from playerfl_core.cli import main

sys.exit(main())
